//! The `fractaldb` command: the embedded benchmarks (`fractaldb bench`) and
//! a SQL shell on a database folder (`fractaldb sql`), and the MySQL-protocol
//! server (`fractaldb server`).

#[cfg(unix)]
mod alloc;
mod backup_cmd;
mod bench;
mod error;
mod server_cmd;
mod sql_shell;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The command line: one subcommand per job.
#[derive(Parser, Debug)]
#[command(name = "fractaldb", version, about = "fractaldb: a transactional store built on fractal trees")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `fractaldb` can be asked to do.
#[derive(Subcommand, Debug)]
enum Command {
    /// Benchmark fractaldb side by side with RocksDB and SQLite on this machine.
    Bench(bench::BenchArgs),
    /// Run one engine's share of a benchmark (started by `bench` itself, one process per engine).
    #[command(hide = true)]
    BenchChild(bench::ChildArgs),
    /// Measure the log, checkpoints and recovery: group commit, checkpoint stalls, time to reopen after a kill.
    BenchDurability(bench::durability::DurabilityArgs),
    /// Run one part of a durability benchmark (started by `bench-durability` itself).
    #[command(hide = true)]
    BenchDurabilityChild(bench::durability::DurabilityChildArgs),
    /// The benchmark posts over SQL: fractaldb's server against MariaDB with InnoDB and MyRocks.
    BenchSql(bench::sql::SqlBenchArgs),
    /// Measure transactions: scaling with threads, hot-key counters, the cost against autocommit writes.
    BenchTxn(bench::txn::TxnArgs),
    /// Measure the bulk loader against puts through the tree for the same sorted rows.
    BenchLoader(bench::loader::LoaderArgs),
    /// Hot backup of a running server (over MySQL's protocol) or of a stopped one's data folder, into a folder a server starts on.
    Backup(backup_cmd::BackupArgs),
    /// Check every dictionary of an environment and show where its bytes are (leaves, internal nodes, spills).
    Check(bench::inspect::CheckArgs),
    /// A SQL shell on a database folder, like the mariadb client (a script on stdin runs in batch mode).
    Sql(sql_shell::SqlArgs),
    /// The server: MySQL's protocol on a data folder (connect with `mariadb -h 127.0.0.1 -u root`).
    Server(server_cmd::ServerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::BenchChild(args) => bench::run_child(args),
        Command::BenchDurability(args) => bench::durability::run(args),
        Command::BenchDurabilityChild(args) => bench::durability::run_child(args),
        Command::BenchTxn(args) => bench::txn::run(args),
        Command::BenchSql(args) => bench::sql::run(args),
        Command::BenchLoader(args) => bench::loader::run(args),
        Command::Backup(args) => backup_cmd::run(args),
        Command::Check(args) => bench::inspect::run(args),
        Command::Sql(args) => return sql_shell::run(args),
        Command::Server(args) => return server_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fractaldb: error: {e}");
            ExitCode::FAILURE
        }
    }
}
