//! FROM with joins: the join tree, USING/NATURAL columns, and how the
//! joined rows are produced.
//!
//! Every row the executor handles is full width: one slot per column of
//! every table in FROM, at the column's scope position (`Expr::Col(i)`
//! is slot i), NULL where a table has not been joined in yet or was
//! NULL-extended by an outer join. So execution order is free to differ
//! from the written order (a RIGHT JOIN runs as a LEFT JOIN with its
//! operands swapped) and every condition evaluates on any row.
//!
//! Joining a table to the rows so far:
//! - **index nested loop** when a condition `inner_col = <expr over the
//!   outer tables>` (or `<`, `>`, ...) pins a prefix of one of the inner
//!   table's indexes: per outer row, the expression's value becomes a
//!   constant and `plan::choose` picks the key range;
//! - else the inner side is read once (through whatever its own
//!   conditions allow) and probed through a **hash table** on an equality
//!   between columns of matching kinds, or by a plain nested loop.
//!
//! WHERE conjuncts: on the *top spine* (nodes not under the inner side of
//! an outer join) each conjunct is applied as soon as every table it
//! reads has been joined, and may restrict the inner side's reads. Under
//! a LEFT JOIN's inner side only null-rejecting conjuncts (a comparison
//! that is false or NULL when the column is NULL) may restrict its reads,
//! and they are still applied after the join, to the NULL-extended rows.

use std::collections::HashMap;

use fractaldb::Txn;
use sqlparser::ast;

use crate::error::{SqlError, SqlResult};
use crate::expr::{CmpKind, CmpOp, EvalCtx, Expr, ScopeCol, Ty};
use crate::plan::flip;
use crate::query::Rel;
use crate::value::Value;

/// MySQL's limit on the tables of one join (error 1116).
const MAX_TABLES: usize = 61;

/// A node of the join tree, in execution form: a RIGHT JOIN is already a
/// LEFT JOIN with its operands swapped.
pub(crate) enum Node {
    Leaf(usize),
    Join(Box<Join>),
}

pub(crate) struct Join {
    /// The side whose rows all survive a LEFT JOIN.
    pub outer: Node,
    pub inner: Node,
    pub left_outer: bool,
    /// The ON condition as written, bound once the scope is known.
    pub on_ast: Option<ast::Expr>,
    /// The bound conditions: USING/NATURAL equalities, then ON's conjuncts.
    pub on: Vec<Expr>,
}

/// FROM, resolved: its tables, the join tree over them, and the column
/// list `SELECT *` expands to.
pub(crate) struct From {
    pub rels: Vec<Rel>,
    pub tree: Option<Node>,
    /// Scope positions of `SELECT *`, in MySQL's order (a USING join's
    /// common columns first, once).
    pub star: Vec<usize>,
    /// Positions an unqualified column name does not reach: the second
    /// copy of a USING/NATURAL join's common column.
    pub hidden: Vec<bool>,
}

impl From {
    /// Builds FROM's tables and tree; `add` resolves one table factor.
    pub fn build(
        from: &[ast::TableWithJoins],
        add: &mut dyn FnMut(&ast::TableFactor, &mut Vec<Rel>) -> SqlResult<()>,
    ) -> SqlResult<From> {
        let mut b = From { rels: Vec::new(), tree: None, star: Vec::new(), hidden: Vec::new() };
        let mut tree: Option<(Node, Vec<usize>)> = None;
        for twj in from {
            let item = b.table_with_joins(twj, add)?;
            tree = Some(match tree {
                None => item,
                Some((l, mut lstar)) => {
                    lstar.extend(item.1);
                    (
                        Node::Join(Box::new(Join {
                            outer: l,
                            inner: item.0,
                            left_outer: false,
                            on_ast: None,
                            on: Vec::new(),
                        })),
                        lstar,
                    )
                }
            });
        }
        if let Some((t, star)) = tree {
            b.tree = Some(t);
            b.star = star;
        }
        Ok(b)
    }

    fn width(&self) -> usize {
        self.rels.iter().map(Rel::width).sum()
    }

    /// A factor's node and its `*` columns.
    fn factor(
        &mut self,
        f: &ast::TableFactor,
        add: &mut dyn FnMut(&ast::TableFactor, &mut Vec<Rel>) -> SqlResult<()>,
    ) -> SqlResult<Option<(Node, Vec<usize>)>> {
        if let ast::TableFactor::NestedJoin { table_with_joins, alias } = f {
            if alias.is_some() {
                return Err(SqlError::syntax("'AS' after a parenthesized join"));
            }
            return self.table_with_joins(table_with_joins, add).map(Some);
        }
        let start = self.width();
        let before = self.rels.len();
        add(f, &mut self.rels)?;
        if self.rels.len() > MAX_TABLES {
            return Err(SqlError::new(
                1116,
                "HY000",
                format!("Too many tables; MariaDB can only use {MAX_TABLES} tables in a join"),
            ));
        }
        if self.rels.len() == before {
            // DUAL: no table.
            return Ok(None);
        }
        let end = self.width();
        self.hidden.resize(end, false);
        Ok(Some((Node::Leaf(before), (start..end).collect())))
    }

    fn table_with_joins(
        &mut self,
        twj: &ast::TableWithJoins,
        add: &mut dyn FnMut(&ast::TableFactor, &mut Vec<Rel>) -> SqlResult<()>,
    ) -> SqlResult<(Node, Vec<usize>)> {
        let first = self.factor(&twj.relation, add)?;
        let mut cur = first.ok_or_else(|| SqlError::syntax("'DUAL' in a join"))?;
        for j in &twj.joins {
            use ast::JoinOperator as J;
            let (kind, c) = match &j.join_operator {
                J::Join(c) | J::Inner(c) | J::CrossJoin(c) | J::StraightJoin(c) => (Kind::Inner, c),
                J::Left(c) | J::LeftOuter(c) => (Kind::Left, c),
                J::Right(c) | J::RightOuter(c) => (Kind::Right, c),
                _ => return Err(SqlError::unsupported("this join type")),
            };
            let right = self.factor(&j.relation, add)?.ok_or_else(|| SqlError::syntax("'DUAL' in a join"))?;
            cur = self.join(cur, right, kind, c)?;
        }
        Ok(cur)
    }

    fn join(
        &mut self,
        (lnode, lstar): (Node, Vec<usize>),
        (rnode, rstar): (Node, Vec<usize>),
        kind: Kind,
        c: &ast::JoinConstraint,
    ) -> SqlResult<(Node, Vec<usize>)> {
        let names: Vec<String> = match c {
            ast::JoinConstraint::Using(cols) => {
                cols.iter().map(|o| crate::expr::ident_name(o).last().cloned().unwrap_or_default()).collect()
            }
            ast::JoinConstraint::Natural => {
                // In the order of the side whose rows all survive.
                let (first, other) = if kind == Kind::Right { (&rstar, &lstar) } else { (&lstar, &rstar) };
                let mut v = Vec::new();
                for &p in first {
                    let n = self.col_name(p);
                    if other.iter().any(|&q| self.col_name(q).eq_ignore_ascii_case(&n))
                        && !v.iter().any(|x: &String| x.eq_ignore_ascii_case(&n))
                    {
                        v.push(n);
                    }
                }
                v
            }
            ast::JoinConstraint::UsingAlias(..) => return Err(SqlError::syntax("'AS' after USING")),
            _ => Vec::new(),
        };
        let on_ast = match c {
            ast::JoinConstraint::On(e) => Some(e.clone()),
            ast::JoinConstraint::None if kind != Kind::Inner => {
                // An outer join needs ON or USING.
                return Err(SqlError::syntax("'' at line 1"));
            }
            _ => None,
        };
        let mut on = Vec::new();
        let mut pairs = Vec::new();
        for n in &names {
            let l = self.find(&lstar, n)?;
            let r = self.find(&rstar, n)?;
            let (lt, rt) = (Ty::of(&self.col(l).ty), Ty::of(&self.col(r).ty));
            on.push(Expr::Cmp(
                CmpOp::Eq,
                crate::expr::cmp_kind(lt, rt),
                Box::new(Expr::Col(l)),
                Box::new(Expr::Col(r)),
            ));
            pairs.push((l, r));
        }
        // The common columns come first, from the side whose rows all
        // survive; then that side's other columns, then the other side's.
        // (Only USING/NATURAL reorder: `a RIGHT JOIN b ON ...` lists a's
        // columns first, as written.)
        let right_first = kind == Kind::Right && !pairs.is_empty();
        let mut star = Vec::new();
        for &(l, r) in &pairs {
            let (keep, hide) = if right_first { (r, l) } else { (l, r) };
            star.push(keep);
            self.hidden[hide] = true;
        }
        let (first, second) = if right_first { (&rstar, &lstar) } else { (&lstar, &rstar) };
        for &p in first.iter().chain(second.iter()) {
            if !pairs.iter().any(|&(l, r)| l == p || r == p) {
                star.push(p);
            }
        }
        let (outer, inner) = if kind == Kind::Right { (rnode, lnode) } else { (lnode, rnode) };
        let node = Node::Join(Box::new(Join { outer, inner, left_outer: kind != Kind::Inner, on_ast, on }));
        Ok((node, star))
    }

    /// The one visible column of `cols` named `n` (USING's lookup).
    fn find(&self, cols: &[usize], n: &str) -> SqlResult<usize> {
        let mut found = None;
        for &p in cols {
            if self.col_name(p).eq_ignore_ascii_case(n) {
                if found.is_some() {
                    return Err(SqlError::ambiguous_column(n, "from clause"));
                }
                found = Some(p);
            }
        }
        found.ok_or_else(|| SqlError::unknown_column(n, "from clause"))
    }

    fn col(&self, p: usize) -> crate::infoschema::VCol {
        let mut off = 0;
        for r in &self.rels {
            let w = r.width();
            if p < off + w {
                return r.col(p - off);
            }
            off += w;
        }
        unreachable!("column position {p} beyond FROM's width {off}")
    }

    fn col_name(&self, p: usize) -> String {
        self.col(p).name
    }

    /// Binds every ON condition over the query's scope.
    pub fn bind_on(&mut self, bind: &mut dyn FnMut(&ast::Expr) -> SqlResult<Expr>) -> SqlResult<()> {
        fn walk(n: &mut Node, bind: &mut dyn FnMut(&ast::Expr) -> SqlResult<Expr>) -> SqlResult<()> {
            if let Node::Join(j) = n {
                walk(&mut j.outer, bind)?;
                walk(&mut j.inner, bind)?;
                if let Some(e) = j.on_ast.take() {
                    let b = bind(&e)?;
                    let mut c = Vec::new();
                    crate::query::conjuncts(&b, &mut c);
                    let c: Vec<Expr> = c.into_iter().cloned().collect();
                    j.on.extend(c);
                }
            }
            Ok(())
        }
        match &mut self.tree {
            Some(t) => walk(t, bind),
            None => Ok(()),
        }
    }

    /// Marks the hidden copies in the scope.
    pub fn apply_hidden(&self, scope: &mut [ScopeCol]) {
        for (c, h) in scope.iter_mut().zip(&self.hidden) {
            c.hidden = *h;
        }
    }

    /// Every bound ON condition of the tree.
    pub fn on_conds(&self) -> Vec<&Expr> {
        fn walk<'n>(n: &'n Node, out: &mut Vec<&'n Expr>) {
            if let Node::Join(j) = n {
                walk(&j.outer, out);
                walk(&j.inner, out);
                out.extend(j.on.iter());
            }
        }
        let mut out = Vec::new();
        if let Some(t) = &self.tree {
            walk(t, &mut out);
        }
        out
    }

    /// True when FROM is one table without joins.
    pub fn single(&self) -> bool {
        matches!(self.tree, Some(Node::Leaf(_))) && self.rels.len() == 1
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Inner,
    Left,
    Right,
}

/// A set of FROM's tables (at most 61: MySQL's limit).
type RelSet = u64;

/// A join's conditions as they serve its inner side (`Exec::conditions`).
struct Conds<'j> {
    inner_only: Vec<&'j Expr>,
    cross: Vec<&'j Expr>,
    probes: Vec<(CmpOp, CmpKind, usize, Expr)>,
}

/// How EXPLAIN describes the read of one table in the join.
pub(crate) struct Step {
    pub rel: usize,
    /// The access path of the table's own conditions.
    pub access: Option<crate::plan::Access>,
    /// An index nested loop: the index and, per pinned part, what pins it.
    pub probe: Option<(usize, Vec<String>)>,
    /// Read once and probed through a hash table.
    pub hashed: bool,
    /// Conditions checked on the rows read.
    pub filtered: bool,
    /// Joined to earlier tables (EXPLAIN's join buffer note).
    pub joined: bool,
}

/// Runs the join tree, returning the rows that pass WHERE.
pub(crate) struct Exec<'a, 'c> {
    pub rels: &'a [Rel],
    pub txn: &'a Txn,
    pub cx: &'a mut EvalCtx<'c>,
    /// WHERE's conjuncts, with the tables each reads.
    conj: Vec<(&'a Expr, RelSet)>,
    applied: Vec<bool>,
    /// Per scope position: its table.
    owner: Vec<usize>,
    offs: Vec<usize>,
    width: usize,
    /// Per table: the slot past the columns that holds its row's engine
    /// key (`keep_keys`), NULL where the table is NULL-extended.
    key_at: Vec<Option<usize>>,
    killed: &'a std::sync::atomic::AtomicBool,
    /// Per table: the columns the query reads from it (`None`: all), for
    /// covering index reads (`plan::covers`).
    pub needed: Vec<Option<Vec<bool>>>,
}

impl<'a, 'c> Exec<'a, 'c> {
    pub fn new(
        rels: &'a [Rel],
        txn: &'a Txn,
        cx: &'a mut EvalCtx<'c>,
        filter: Option<&'a Expr>,
        killed: &'a std::sync::atomic::AtomicBool,
    ) -> Exec<'a, 'c> {
        let mut owner = Vec::new();
        let mut offs = Vec::new();
        for (i, r) in rels.iter().enumerate() {
            offs.push(owner.len());
            owner.extend(std::iter::repeat_n(i, r.width()));
        }
        let width = owner.len();
        let key_at = vec![None; rels.len()];
        let needed = vec![None; rels.len()];
        let mut e = Exec {
            rels,
            txn,
            cx,
            conj: Vec::new(),
            applied: Vec::new(),
            owner,
            offs,
            width,
            key_at,
            killed,
            needed,
        };
        if let Some(f) = filter {
            let mut c = Vec::new();
            crate::query::conjuncts(f, &mut c);
            e.conj = c.into_iter().map(|x| (x, e.rels_of(x))).collect();
            e.applied = vec![false; e.conj.len()];
        }
        e
    }

    /// Rows carry the engine key of each of `tables` (engine tables) in a
    /// slot past FROM's columns, in the order given: multi-table UPDATE
    /// and DELETE change the rows they joined, and a table without a
    /// primary key is found only by its hidden key. No expression reads
    /// these slots (they are beyond every scope position).
    pub fn keep_keys(&mut self, tables: &[usize]) {
        for &r in tables {
            debug_assert!(matches!(self.rels[r], Rel::Table(_)), "only engine tables have keys");
            self.key_at[r] = Some(self.owner.len());
            self.owner.push(r);
        }
        self.width = self.owner.len();
    }

    /// The tables `e` reads. A correlated subquery may read any (its
    /// outer references are not visible here): all, so it waits for the
    /// whole join.
    fn rels_of(&self, e: &Expr) -> RelSet {
        let mut s = 0;
        e.walk(&mut |x| match x {
            Expr::Col(i) => {
                if let Some(&r) = self.owner.get(*i) {
                    s |= 1 << r;
                }
            }
            Expr::Correlated(_) => s = RelSet::MAX,
            _ => {}
        });
        s
    }

    fn mask(n: &Node) -> RelSet {
        match n {
            Node::Leaf(r) => 1 << *r,
            Node::Join(j) => Self::mask(&j.outer) | Self::mask(&j.inner),
        }
    }

    /// The joined rows of the whole tree that pass WHERE.
    pub fn run(&mut self, tree: &Node) -> SqlResult<Vec<Vec<Value>>> {
        let mut rows = self.node(tree, true)?;
        // Whatever is left (it reads no table at all, or a table the tree
        // has not got: cannot happen) applies to the result.
        let rest: Vec<&Expr> =
            self.conj.iter().zip(&self.applied).filter(|(_, a)| !**a).map(|((e, _), _)| *e).collect();
        if !rest.is_empty() {
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if all_true(&rest, &r, self.cx)? {
                    kept.push(r);
                }
            }
            rows = kept;
        }
        Ok(rows)
    }

    fn check_killed(&self) -> SqlResult<()> {
        if self.killed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Err(SqlError::interrupted());
        }
        Ok(())
    }

    /// Rows of `n`; `top`: `n` is on the top spine, so WHERE's conjuncts
    /// over its tables apply to its rows.
    fn node(&mut self, n: &Node, top: bool) -> SqlResult<Vec<Vec<Value>>> {
        let rows = match n {
            Node::Leaf(r) => {
                let mine = 1u64 << *r;
                let filters: Vec<&Expr> = if top {
                    let mut v = Vec::new();
                    for (i, (e, s)) in self.conj.iter().enumerate() {
                        if *s == mine && !self.applied[i] {
                            v.push(*e);
                            self.applied[i] = true;
                        }
                    }
                    v
                } else {
                    Vec::new()
                };
                self.leaf(*r, &filters, &[])?
            }
            Node::Join(j) => self.join(j, top)?,
        };
        if !top {
            return Ok(rows);
        }
        // WHERE's conjuncts whose tables are all here.
        let have = Self::mask(n);
        let mut now = Vec::new();
        for (i, (e, s)) in self.conj.iter().enumerate() {
            if !self.applied[i] && *s & !have == 0 {
                now.push(*e);
                self.applied[i] = true;
            }
        }
        if now.is_empty() {
            return Ok(rows);
        }
        let mut kept = Vec::with_capacity(rows.len());
        for r in rows {
            if all_true(&now, &r, self.cx)? {
                kept.push(r);
            }
        }
        Ok(kept)
    }

    /// Reads table `r` into full-width rows, keeping those passing
    /// `filters` (which read only this table); `probe` are extra
    /// conditions with constants that only narrow the read (they are not
    /// checked here).
    fn leaf(&mut self, r: usize, filters: &[&Expr], probe: &[Expr]) -> SqlResult<Vec<Vec<Value>>> {
        let off = self.offs[r];
        let width = self.width;
        let mut out = Vec::new();
        match &self.rels[r] {
            Rel::Table(src) => {
                let mut conds: Vec<&Expr> = filters.to_vec();
                conds.extend(probe.iter());
                let access = crate::plan::choose(
                    self.txn,
                    &src.table,
                    &src.hints,
                    &conds,
                    off,
                    self.cx,
                    self.needed[r].as_deref(),
                );
                let cx = &mut *self.cx;
                let key_at = self.key_at[r];
                crate::plan::for_each_row(self.txn, &src.table, &access, |k, row| {
                    let mut full = vec![Value::Null; width];
                    for (slot, v) in full[off..].iter_mut().zip(row) {
                        *slot = v;
                    }
                    if let Some(p) = key_at {
                        full[p] = Value::Str(k.to_vec());
                    }
                    if all_true(filters, &full, cx)? {
                        out.push(full);
                    }
                    Ok(true)
                })?;
            }
            Rel::Rows { view, .. } => {
                for row in &view.rows {
                    let mut full = vec![Value::Null; width];
                    full[off..off + row.len()].clone_from_slice(row);
                    if all_true(filters, &full, self.cx)? {
                        out.push(full);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The conditions of join `j` as they serve its inner side: those on
    /// the inner side alone, those across both sides, and among the latter
    /// the comparisons of an inner column with outer values (probes). Marks
    /// the WHERE conjuncts this join applies.
    fn conditions<'j>(&mut self, j: &'j Join, top: bool) -> Conds<'j>
    where
        'a: 'j,
    {
        let omask = Self::mask(&j.outer);
        let imask = Self::mask(&j.inner);
        // Conditions that may narrow the inner side: ON's, and on the top
        // spine WHERE's (only null-rejecting ones under a LEFT JOIN, and
        // those stay unapplied: they must still see the NULL-extended rows).
        let mut pool: Vec<(&Expr, RelSet, Option<usize>)> =
            j.on.iter().map(|e| (e, self.rels_of(e), None)).collect();
        if top {
            for (i, (e, s)) in self.conj.iter().enumerate() {
                if self.applied[i] || *s & imask == 0 || *s & !(imask | omask) != 0 {
                    continue;
                }
                if j.left_outer && !null_rejecting(e, imask, self) {
                    continue;
                }
                pool.push((e, *s, Some(i)));
            }
        }
        // Conditions on the inner side alone filter it before matching.
        let mut inner_only: Vec<&Expr> = Vec::new();
        let mut cross: Vec<&Expr> = Vec::new();
        for &(e, s, wi) in &pool {
            if s & !imask == 0 {
                inner_only.push(e);
            } else {
                cross.push(e);
            }
            if let (Some(i), false) = (wi, j.left_outer) {
                self.applied[i] = true;
            }
        }
        // Equalities and comparisons between an inner column and outer values.
        let mut probes: Vec<(CmpOp, CmpKind, usize, Expr)> = Vec::new();
        for e in &cross {
            let Expr::Cmp(op, kind, a, b) = e else { continue };
            if matches!(op, CmpOp::Ne | CmpOp::NullSafeEq) {
                continue;
            }
            let side = |x: &Expr, y: &Expr| -> Option<usize> {
                match x {
                    Expr::Col(c) if imask & (1 << self.owner[*c]) != 0 => {
                        let ys = self.rels_of(y);
                        (ys != 0 && ys & !omask == 0).then_some(*c)
                    }
                    _ => None,
                }
            };
            if let Some(c) = side(a, b) {
                probes.push((*op, *kind, c, (**b).clone()));
            } else if let Some(c) = side(b, a) {
                probes.push((flip(*op), *kind, c, (**a).clone()));
            }
        }
        Conds { inner_only, cross, probes }
    }

    fn join(&mut self, j: &Join, top: bool) -> SqlResult<Vec<Vec<Value>>> {
        let outer_rows = self.node(&j.outer, top)?;
        let imask = Self::mask(&j.inner);
        let Conds { inner_only, cross, probes } = self.conditions(j, top);
        let rels = self.rels;
        let leaf = match j.inner {
            Node::Leaf(r) => Some(r),
            _ => None,
        };
        // How many index parts the inner side's own conditions pin; the
        // probes are worth a read per outer row only if they pin more.
        let base_eq = match leaf.map(|r| (r, &rels[r])) {
            Some((r, Rel::Table(src))) if !probes.is_empty() => Some(
                crate::plan::choose(
                    self.txn,
                    &src.table,
                    &src.hints,
                    &inner_only,
                    self.offs[r],
                    self.cx,
                    self.needed[r].as_deref(),
                )
                .eq_parts,
            ),
            _ => None,
        };
        let mut materialized: Option<Vec<Vec<Value>>> = None;
        let mut hash: Option<HashMap<Vec<u8>, Vec<usize>>> = None;
        let hash_probe = self.hashable(&probes);
        let mut out = Vec::new();
        for l in &outer_rows {
            self.check_killed()?;
            let mut matched = false;
            // Index nested loop: the outer values narrow the inner read.
            if let (Some(r), Some(base)) = (leaf, base_eq) {
                let Rel::Table(src) = &rels[r] else { unreachable!("base_eq is only set for tables") };
                let mut extra = Vec::with_capacity(probes.len());
                for (op, kind, c, y) in &probes {
                    let v = y.eval(l, self.cx)?;
                    extra.push(Expr::Cmp(*op, *kind, Box::new(Expr::Col(*c)), Box::new(Expr::Const(v))));
                }
                let mut conds = inner_only.clone();
                conds.extend(extra.iter());
                let access = crate::plan::choose(
                    self.txn,
                    &src.table,
                    &src.hints,
                    &conds,
                    self.offs[r],
                    self.cx,
                    self.needed[r].as_deref(),
                );
                if access.eq_parts > base || (access.has_range && access.index.is_some() && base == 0) {
                    for ir in self.leaf(r, &inner_only, &extra)? {
                        matched |= self.emit(l, &ir, imask, &cross, &mut out)?;
                    }
                    if j.left_outer && !matched {
                        out.push(l.clone());
                    }
                    continue;
                }
            }
            // The inner side read once, probed by hash or scanned.
            if materialized.is_none() {
                let rows = match leaf {
                    Some(r) => self.leaf(r, &inner_only, &[])?,
                    None => {
                        let rows = self.node(&j.inner, top && !j.left_outer)?;
                        let mut kept = Vec::with_capacity(rows.len());
                        for r in rows {
                            if all_true(&inner_only, &r, self.cx)? {
                                kept.push(r);
                            }
                        }
                        kept
                    }
                };
                if let Some((c, _, ty)) = &hash_probe {
                    let (c, ty) = (*c, *ty);
                    let mut h: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
                    for (i, r) in rows.iter().enumerate() {
                        if r[c].is_null() {
                            continue;
                        }
                        let mut k = Vec::new();
                        crate::query::group_key(&r[c], ty, &mut k);
                        h.entry(k).or_default().push(i);
                    }
                    hash = Some(h);
                }
                materialized = Some(rows);
            }
            let rows = materialized.as_ref().expect("materialized above");
            match (&hash, &hash_probe) {
                (Some(h), Some((_, y, ty))) => {
                    let ty = *ty;
                    let v = y.eval(l, self.cx)?;
                    if !v.is_null() {
                        let mut k = Vec::new();
                        crate::query::group_key(&v, ty, &mut k);
                        if let Some(ix) = h.get(&k) {
                            for &i in ix {
                                matched |= self.emit(l, &rows[i], imask, &cross, &mut out)?;
                            }
                        }
                    }
                }
                _ => {
                    for ir in rows {
                        matched |= self.emit(l, ir, imask, &cross, &mut out)?;
                    }
                }
            }
            if j.left_outer && !matched {
                out.push(l.clone());
            }
        }
        Ok(out)
    }

    /// EXPLAIN: how each table of `tree` would be read, in execution
    /// order, by the same decisions `run` makes (the index nested loop's
    /// per-row choice is judged by which index parts the probes pin).
    pub fn explain(&mut self, tree: &Node) -> Vec<Step> {
        let mut out = Vec::new();
        self.explain_node(tree, true, false, &mut out);
        out
    }

    fn explain_node(&mut self, n: &Node, top: bool, joined: bool, out: &mut Vec<Step>) {
        match n {
            Node::Leaf(r) => {
                let mine = 1u64 << *r;
                let mut filters: Vec<&Expr> = Vec::new();
                if top {
                    for (i, (e, s)) in self.conj.iter().enumerate() {
                        if *s == mine && !self.applied[i] {
                            filters.push(*e);
                            self.applied[i] = true;
                        }
                    }
                }
                let access = match &self.rels[*r] {
                    Rel::Table(src) => Some(crate::plan::choose(
                        self.txn,
                        &src.table,
                        &src.hints,
                        &filters,
                        self.offs[*r],
                        self.cx,
                        self.needed[*r].as_deref(),
                    )),
                    Rel::Rows { .. } => None,
                };
                // Conditions the key range answers whole are not checked
                // again (as for a single table, `query::explain_plan`).
                let used = access.as_ref().map_or(0, |a| a.eq_parts + usize::from(a.has_range));
                let filtered = filters.len() > used;
                out.push(Step { rel: *r, access, probe: None, hashed: false, filtered, joined });
            }
            Node::Join(j) => {
                self.explain_node(&j.outer, top, joined, out);
                let c = self.conditions(j, top);
                let Node::Leaf(r) = j.inner else {
                    self.explain_node(&j.inner, top && !j.left_outer, true, out);
                    return;
                };
                let off = self.offs[r];
                let (access, probe) = match &self.rels[r] {
                    Rel::Table(src) => {
                        let base = crate::plan::choose(
                            self.txn,
                            &src.table,
                            &src.hints,
                            &c.inner_only,
                            off,
                            self.cx,
                            self.needed[r].as_deref(),
                        );
                        let mut best: Option<(usize, Vec<String>)> = None;
                        let secondary = src.table.secondary_usable(self.txn);
                        for (ix, def) in src.table.def.indexes.iter().enumerate().filter(|(i, d)| {
                            !d.disabled
                                && (secondary || d.kind == crate::catalog::IndexKind::Primary)
                                && src.hints.allows(*i)
                        }) {
                            let mut refs = Vec::new();
                            for p in &def.parts {
                                let col = off + p.col;
                                if let Some((_, _, _, y)) =
                                    c.probes.iter().find(|(op, _, pc, _)| *op == CmpOp::Eq && *pc == col)
                                {
                                    refs.push(self.describe(y));
                                } else if base.index == Some(ix) && refs.len() < base.eq_parts {
                                    refs.push("const".to_string());
                                } else {
                                    break;
                                }
                                if p.prefix.is_some() {
                                    break;
                                }
                            }
                            if refs.len() > base.eq_parts
                                && best.as_ref().is_none_or(|(_, b)| refs.len() > b.len())
                            {
                                best = Some((ix, refs));
                            }
                        }
                        (Some(base), best)
                    }
                    Rel::Rows { .. } => (None, None),
                };
                let hashed = probe.is_none() && self.hashable(&c.probes).is_some();
                let filtered = !c.inner_only.is_empty() || !c.cross.is_empty();
                out.push(Step { rel: r, access, probe, hashed, filtered, joined: true });
            }
        }
    }

    /// What pins an index part in EXPLAIN's `ref`: `db.table.column` for
    /// an outer column, else `func`.
    fn describe(&self, e: &Expr) -> String {
        match e {
            Expr::Col(c) => {
                let r = self.owner[*c];
                let col = self.rels[r].col(*c - self.offs[r]).name;
                match &self.rels[r] {
                    Rel::Table(src) => format!("{}.{}.{}", src.table.def.db, src.alias, col),
                    Rel::Rows { alias, .. } => format!("{alias}.{col}"),
                }
            }
            _ => "func".to_string(),
        }
    }

    /// Joins outer row `l` with inner row `ir` and keeps it if `conds` hold.
    fn emit(
        &mut self,
        l: &[Value],
        ir: &[Value],
        imask: RelSet,
        conds: &[&Expr],
        out: &mut Vec<Vec<Value>>,
    ) -> SqlResult<bool> {
        let mut row = l.to_vec();
        for (i, slot) in row.iter_mut().enumerate() {
            if imask & (1 << self.owner[i]) != 0 {
                *slot = ir[i].clone();
            }
        }
        if all_true(conds, &row, self.cx)? {
            out.push(row);
            return Ok(true);
        }
        Ok(false)
    }

    /// An equality probe a hash table can serve: an inner column against
    /// an outer column of the same comparison family, so equal hash keys
    /// mean equal values (strings under the comparison's collation,
    /// exact numbers by their canonical key, `query::group_key`).
    fn hashable(&self, probes: &[(CmpOp, CmpKind, usize, Expr)]) -> Option<(usize, Expr, Ty)> {
        let col_ty = |c: usize| Ty::of(&self.rels[self.owner[c]].col(c - self.offs[self.owner[c]]).ty);
        for (op, kind, c, y) in probes {
            if *op != CmpOp::Eq {
                continue;
            }
            let Expr::Col(yc) = y else { continue };
            let (a, b) = (col_ty(*c), col_ty(*yc));
            let exact = |t: Ty| matches!(t, Ty::Int | Ty::UInt | Ty::Decimal(_));
            match kind {
                CmpKind::Str(coll) if matches!((a, b), (Ty::Str(_), Ty::Str(_))) => {
                    return Some((*c, y.clone(), Ty::Str(*coll)));
                }
                CmpKind::Numeric if exact(a) && exact(b) => return Some((*c, y.clone(), Ty::Decimal(0))),
                _ => {}
            }
        }
        None
    }
}

fn all_true(conds: &[&Expr], row: &[Value], cx: &mut EvalCtx) -> SqlResult<bool> {
    for c in conds {
        if c.eval(row, cx)?.truth() != Some(true) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// True when `e` cannot be true on a row whose `inner` tables are all
/// NULL: a comparison, BETWEEN, IN or LIKE testing one of their columns.
fn null_rejecting(e: &Expr, inner: RelSet, x: &Exec) -> bool {
    let is_inner_col = |e: &Expr| matches!(e, Expr::Col(c) if inner & (1 << x.owner[*c]) != 0);
    match e {
        Expr::Cmp(op, _, a, b) if *op != CmpOp::NullSafeEq => is_inner_col(a) || is_inner_col(b),
        Expr::Between(v, _, _, _, false) | Expr::In(v, _, _, false, _) => is_inner_col(v),
        Expr::Like { expr, negated: false, .. } => is_inner_col(expr),
        _ => false,
    }
}
