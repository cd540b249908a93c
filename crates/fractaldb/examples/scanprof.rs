// Scratch profiling tool (not committed): scans or point-gets a dictionary.
use fractaldb::{Env, EnvOptions};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = &args[1];
    let mode = args.get(2).map(String::as_str).unwrap_or("scan");
    let opts = EnvOptions { cache_size_bytes: 64 << 20, ..Default::default() };
    let env = Env::open(dir, opts).unwrap();
    let d = env.open_dictionary("insert").unwrap();
    let t = Instant::now();
    let mut n = 0u64;
    let mut bytes = 0usize;
    if mode == "scan" {
        for _ in 0..2 {
            let mut c = d.cursor();
            let mut more = c.first().unwrap();
            while more {
                bytes += c.key().len() + c.value().len();
                n += 1;
                more = c.next().unwrap();
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!("{n} rows {bytes} bytes in {s:.2}s: {:.0} rows/s", n as f64 / s);
    drop(d);
    env.close().unwrap();
}
