//! The storage seam: one connection type over the two backends.
//!
//! Every module above `storage` talks to a [`Connection`], whichever database is behind it:
//! an SQLite file (the embedded default, through rusqlite) or a PostgreSQL server (the team
//! store, through the `postgres` crate). The API follows rusqlite's names and shapes
//! (`prepare_cached`, `query_row`, `query_map`, `execute`, `params!`, `optional()`), so the
//! SQL the engine writes reads the same on both; SQL is written in the dialect both servers
//! accept (`?N` placeholders are turned into `$N` for PostgreSQL, `ON CONFLICT`, `RETURNING`,
//! `rowid` as a real column on PostgreSQL). What only one backend has (SQLite's PRAGMAs and
//! FTS5, PostgreSQL's roles and `LISTEN`) is reached through [`Connection::sqlite`] or
//! [`Connection::backend`] in the storage modules.
//!
//! Values cross the seam as [`ValueRef`] (SQLite's five storage classes). PostgreSQL is
//! strictly typed, so a value is encoded for the column's declared type (an integer into a
//! `boolean` or `double precision` column, say), and a column is read by its type.

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;

use crate::error::{Error, Result};

/// Which database is behind a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A value as SQL sees it, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Integer(i64),
    Real(f64),
    /// Text as stored: SQLite does not promise valid UTF-8 (another program may have written
    /// the file), so the bytes are kept and checked where read as a string.
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

/// An owned [`ValueRef`].
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(f) => ValueRef::Real(*f),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }
    }
}

impl<'a> ValueRef<'a> {
    pub fn to_owned(self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(s) => Value::Text(String::from_utf8_lossy(s).into_owned()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        }
    }

    pub fn as_str(self) -> Result<&'a str> {
        match self {
            ValueRef::Text(s) => {
                std::str::from_utf8(s).map_err(|e| Error::column(format!("text that is not UTF-8: {e}")))
            }
            v => Err(Error::column(format!("expected text, found {}", v.type_name()))),
        }
    }

    pub fn as_str_or_null(self) -> Result<Option<&'a str>> {
        match self {
            ValueRef::Null => Ok(None),
            v => v.as_str().map(Some),
        }
    }

    pub fn as_blob(self) -> Result<&'a [u8]> {
        match self {
            ValueRef::Blob(b) => Ok(b),
            v => Err(Error::column(format!("expected a blob, found {}", v.type_name()))),
        }
    }

    pub fn as_i64(self) -> Result<i64> {
        match self {
            ValueRef::Integer(i) => Ok(i),
            v => Err(Error::column(format!("expected an integer, found {}", v.type_name()))),
        }
    }

    /// The storage class's name, as SQLite's `typeof()` gives it.
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueRef::Null => "null",
            ValueRef::Integer(_) => "integer",
            ValueRef::Real(_) => "real",
            ValueRef::Text(_) => "text",
            ValueRef::Blob(_) => "blob",
        }
    }
}

fn sqlite_ref(v: rusqlite::types::ValueRef<'_>) -> Result<ValueRef<'_>> {
    use rusqlite::types::ValueRef as R;
    Ok(match v {
        R::Null => ValueRef::Null,
        R::Integer(i) => ValueRef::Integer(i),
        R::Real(f) => ValueRef::Real(f),
        R::Text(t) => ValueRef::Text(t),
        R::Blob(b) => ValueRef::Blob(b),
    })
}

/// A parameter of a statement.
pub trait ToSql {
    fn to_sql(&self) -> Result<ValueRef<'_>>;
}

impl<T: ToSql + ?Sized> ToSql for &T {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        (**self).to_sql()
    }
}
impl<T: ToSql> ToSql for Option<T> {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        match self {
            None => Ok(ValueRef::Null),
            Some(v) => v.to_sql(),
        }
    }
}
impl<T: ToSql + ?Sized> ToSql for Box<T> {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        (**self).to_sql()
    }
}
impl ToSql for str {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Text(self.as_bytes()))
    }
}
impl ToSql for String {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Text(self.as_bytes()))
    }
}
impl ToSql for std::borrow::Cow<'_, str> {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Text(self.as_bytes()))
    }
}
impl ToSql for [u8] {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Blob(self))
    }
}
impl ToSql for Vec<u8> {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Blob(self))
    }
}
impl ToSql for bool {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Integer(*self as i64))
    }
}
impl ToSql for f64 {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Real(*self))
    }
}
impl ToSql for f32 {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(ValueRef::Real(*self as f64))
    }
}
impl ToSql for Value {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(self.as_ref())
    }
}
impl ToSql for ValueRef<'_> {
    fn to_sql(&self) -> Result<ValueRef<'_>> {
        Ok(*self)
    }
}
macro_rules! int_to_sql {
    ($($t:ty)*) => {$(
        impl ToSql for $t {
            fn to_sql(&self) -> Result<ValueRef<'_>> {
                i64::try_from(*self)
                    .map(ValueRef::Integer)
                    .map_err(|_| Error::invalid(format!("integer {} is out of SQL's range", self)))
            }
        }
    )*};
}
int_to_sql!(i8 i16 i32 i64 u8 u16 u32 u64 usize isize);

/// The parameters of one statement: `[]`, `[a]`, [`params!`], `&[&dyn ToSql]` or
/// [`params_from_iter`].
pub trait Params {
    fn values(&self) -> Result<Vec<ValueRef<'_>>>;
}

impl Params for [&dyn ToSql; 0] {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        Ok(Vec::new())
    }
}
impl Params for () {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        Ok(Vec::new())
    }
}
impl Params for &[&dyn ToSql] {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        self.iter().map(|p| p.to_sql()).collect()
    }
}
macro_rules! array_params {
    ($($n:literal)*) => {$(
        impl<T: ToSql> Params for [T; $n] {
            fn values(&self) -> Result<Vec<ValueRef<'_>>> {
                self.iter().map(|p| p.to_sql()).collect()
            }
        }
        impl<T: ToSql> Params for &[T; $n] {
            fn values(&self) -> Result<Vec<ValueRef<'_>>> {
                self.iter().map(|p| p.to_sql()).collect()
            }
        }
    )*};
}
array_params!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);

/// Parameters from an iterator (a statement built for a number of values).
pub struct ParamsFromIter<T>(Vec<T>);

pub fn params_from_iter<I>(iter: I) -> ParamsFromIter<I::Item>
where
    I: IntoIterator,
    I::Item: ToSql,
{
    ParamsFromIter(iter.into_iter().collect())
}

impl<T: ToSql> Params for ParamsFromIter<T> {
    fn values(&self) -> Result<Vec<ValueRef<'_>>> {
        self.0.iter().map(|p| p.to_sql()).collect()
    }
}

/// `params![a, b, c]`: a statement's parameters of different types.
#[macro_export]
macro_rules! params {
    () => { [] as [&dyn $crate::storage::db::ToSql; 0] };
    ($($p:expr),+ $(,)?) => { &[$(&$p as &dyn $crate::storage::db::ToSql),+] as &[&dyn $crate::storage::db::ToSql] };
}
pub use crate::params;

/// Reads one column into a Rust value, with rusqlite's rules on both backends (an integer
/// reads as a float, text never reads as a number).
pub trait FromSql: Sized {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError>;
}

#[derive(Debug)]
pub enum FromSqlError {
    InvalidType,
    OutOfRange(i64),
    Other(String),
}

impl<T: FromSql> FromSql for Option<T> {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        match v {
            ValueRef::Null => Ok(None),
            v => T::from_sql(v).map(Some),
        }
    }
}
impl FromSql for i64 {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        match v {
            ValueRef::Integer(i) => Ok(i),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}
macro_rules! int_from_sql {
    ($($t:ty)*) => {$(
        impl FromSql for $t {
            fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
                let i = i64::from_sql(v)?;
                <$t>::try_from(i).map_err(|_| FromSqlError::OutOfRange(i))
            }
        }
    )*};
}
int_from_sql!(i8 i16 i32 u8 u16 u32 u64 usize isize);
impl FromSql for bool {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        Ok(i64::from_sql(v)? != 0)
    }
}
impl FromSql for f64 {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        match v {
            ValueRef::Integer(i) => Ok(i as f64),
            ValueRef::Real(f) => Ok(f),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}
impl FromSql for f32 {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        f64::from_sql(v).map(|f| f as f32)
    }
}
impl FromSql for String {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        match v {
            ValueRef::Text(s) => String::from_utf8(s.to_vec()).map_err(|e| FromSqlError::Other(e.to_string())),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}
impl FromSql for Vec<u8> {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        match v {
            ValueRef::Blob(b) => Ok(b.to_vec()),
            _ => Err(FromSqlError::InvalidType),
        }
    }
}
impl FromSql for Value {
    fn from_sql(v: ValueRef<'_>) -> std::result::Result<Self, FromSqlError> {
        Ok(v.to_owned())
    }
}

/// A column of a row: its position or its name.
pub trait RowIndex {
    fn index(&self, row: &Row<'_>) -> Result<usize>;
}
impl RowIndex for usize {
    fn index(&self, row: &Row<'_>) -> Result<usize> {
        if *self < row.column_count() {
            Ok(*self)
        } else {
            Err(Error::column(format!("no column {self}")))
        }
    }
}
impl RowIndex for &str {
    fn index(&self, row: &Row<'_>) -> Result<usize> {
        (0..row.column_count())
            .find(|i| row.column_name(*i).is_some_and(|n| n.eq_ignore_ascii_case(self)))
            .ok_or_else(|| Error::column(format!("no column named {self}")))
    }
}

/// One row of a result.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    inner: RowInner<'a>,
}

#[derive(Clone, Copy)]
enum RowInner<'a> {
    Sqlite(&'a rusqlite::Row<'a>),
    Postgres(&'a postgres::Row),
}

impl<'a> Row<'a> {
    pub fn get<I: RowIndex, T: FromSql>(&self, i: I) -> Result<T> {
        let i = i.index(self)?;
        let v = self.get_ref(i)?;
        T::from_sql(v).map_err(|e| {
            let name = self.column_name(i).unwrap_or("?").to_string();
            match (e, &self.inner) {
                (FromSqlError::InvalidType, RowInner::Sqlite(_)) => Error::Db(rusqlite::Error::InvalidColumnType(
                    i,
                    name,
                    match v {
                        ValueRef::Null => rusqlite::types::Type::Null,
                        ValueRef::Integer(_) => rusqlite::types::Type::Integer,
                        ValueRef::Real(_) => rusqlite::types::Type::Real,
                        ValueRef::Text(_) => rusqlite::types::Type::Text,
                        ValueRef::Blob(_) => rusqlite::types::Type::Blob,
                    },
                )),
                (FromSqlError::OutOfRange(n), RowInner::Sqlite(_)) => {
                    Error::Db(rusqlite::Error::IntegralValueOutOfRange(i, n))
                }
                (e, _) => Error::column(format!("column {name} ({i}): cannot read {} as asked ({e:?})", v.type_name())),
            }
        })
    }

    /// The column's value without copying it.
    pub fn get_ref(&self, i: usize) -> Result<ValueRef<'_>> {
        match &self.inner {
            RowInner::Sqlite(r) => sqlite_ref(r.get_ref(i)?),
            RowInner::Postgres(r) => pg::value(r, i),
        }
    }

    pub fn column_count(&self) -> usize {
        match &self.inner {
            RowInner::Sqlite(r) => r.as_ref().column_count(),
            RowInner::Postgres(r) => r.len(),
        }
    }

    pub fn column_name(&self, i: usize) -> Option<&str> {
        match &self.inner {
            RowInner::Sqlite(r) => r.as_ref().column_name(i).ok(),
            RowInner::Postgres(r) => r.columns().get(i).map(|c| c.name()),
        }
    }
}

/// Results of a query, one row at a time (`while let Some(row) = rows.next()?`).
pub struct Rows<'s> {
    inner: RowsInner<'s>,
}

enum RowsInner<'s> {
    Sqlite(rusqlite::Rows<'s>),
    Postgres { rows: std::vec::IntoIter<postgres::Row>, current: Option<postgres::Row> },
}

impl<'s> Rows<'s> {
    #[allow(clippy::should_implement_trait)] // A lending iterator: each row borrows the cursor.
    pub fn next(&mut self) -> Result<Option<Row<'_>>> {
        match &mut self.inner {
            RowsInner::Sqlite(rows) => Ok(rows.next()?.map(|r| Row { inner: RowInner::Sqlite(r) })),
            RowsInner::Postgres { rows, current } => {
                *current = rows.next();
                Ok(current.as_ref().map(|r| Row { inner: RowInner::Postgres(r) }))
            }
        }
    }
}

/// A query's rows, each turned into a value by a function.
pub struct MappedRows<'s, F> {
    rows: Rows<'s>,
    f: F,
}

impl<T, F: FnMut(&Row<'_>) -> Result<T>> Iterator for MappedRows<'_, F> {
    type Item = Result<T>;
    fn next(&mut self) -> Option<Result<T>> {
        match self.rows.next() {
            Ok(Some(row)) => Some((self.f)(&row)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

/// A prepared statement.
pub struct Statement<'c> {
    inner: StmtInner<'c>,
}

enum StmtInner<'c> {
    Sqlite(rusqlite::Statement<'c>),
    SqliteCached(rusqlite::CachedStatement<'c>),
    Postgres { pg: &'c pg::Pg, stmt: postgres::Statement },
}

struct SqliteArg<'a>(ValueRef<'a>);

impl rusqlite::ToSql for SqliteArg<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef as R};
        Ok(ToSqlOutput::Borrowed(match self.0 {
            ValueRef::Null => R::Null,
            ValueRef::Integer(i) => R::Integer(i),
            ValueRef::Real(f) => R::Real(f),
            ValueRef::Text(s) => R::Text(s),
            ValueRef::Blob(b) => R::Blob(b),
        }))
    }
}

fn sqlite_args<'a>(values: &'a [ValueRef<'a>]) -> impl rusqlite::Params + 'a {
    rusqlite::params_from_iter(values.iter().map(|v| SqliteArg(*v)))
}

impl<'c> Statement<'c> {
    fn sqlite(&mut self) -> Option<&mut rusqlite::Statement<'c>> {
        match &mut self.inner {
            StmtInner::Sqlite(s) => Some(s),
            StmtInner::SqliteCached(s) => Some(s),
            StmtInner::Postgres { .. } => None,
        }
    }

    /// Runs a statement that returns no rows; the number of rows it changed.
    pub fn execute<P: Params>(&mut self, params: P) -> Result<usize> {
        let values = params.values()?;
        if let Some(s) = self.sqlite() {
            return Ok(s.execute(sqlite_args(&values))?);
        }
        let StmtInner::Postgres { pg, stmt } = &self.inner else { unreachable!() };
        pg.execute(stmt, &values)
    }

    /// Runs a query; its rows one at a time.
    pub fn query<P: Params>(&mut self, params: P) -> Result<Rows<'_>> {
        let values = params.values()?;
        if let StmtInner::Postgres { pg, stmt } = &self.inner {
            let rows = pg.query(stmt, &values)?;
            return Ok(Rows { inner: RowsInner::Postgres { rows: rows.into_iter(), current: None } });
        }
        let s = self.sqlite().expect("an SQLite statement");
        Ok(Rows { inner: RowsInner::Sqlite(s.query(sqlite_args(&values))?) })
    }

    pub fn query_map<T, P: Params, F: FnMut(&Row<'_>) -> Result<T>>(
        &mut self,
        params: P,
        f: F,
    ) -> Result<MappedRows<'_, F>> {
        Ok(MappedRows { rows: self.query(params)?, f })
    }

    /// The first row turned into a value; [`Error::NoRows`] when there is none.
    pub fn query_row<T, P: Params, F: FnOnce(&Row<'_>) -> Result<T>>(&mut self, params: P, f: F) -> Result<T> {
        let mut rows = self.query(params)?;
        match rows.next()? {
            Some(row) => f(&row),
            None => Err(Error::NoRows),
        }
    }

    /// Whether the query returns a row.
    pub fn exists<P: Params>(&mut self, params: P) -> Result<bool> {
        Ok(self.query(params)?.next()?.is_some())
    }

    pub fn column_count(&self) -> usize {
        match &self.inner {
            StmtInner::Sqlite(s) => s.column_count(),
            StmtInner::SqliteCached(s) => s.column_count(),
            StmtInner::Postgres { stmt, .. } => stmt.columns().len(),
        }
    }

    pub fn column_names(&self) -> Vec<&str> {
        match &self.inner {
            StmtInner::Sqlite(s) => s.column_names(),
            StmtInner::SqliteCached(s) => s.column_names(),
            StmtInner::Postgres { stmt, .. } => stmt.columns().iter().map(|c| c.name()).collect(),
        }
    }
}

/// How a transaction takes its locks. On SQLite these are `BEGIN DEFERRED` and
/// `BEGIN IMMEDIATE`; on PostgreSQL a write transaction is `SERIALIZABLE`, whose
/// serialization failures are retried like SQLite's BUSY ([`crate::store::with_retry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionBehavior {
    Deferred,
    Immediate,
}

/// One database connection, SQLite or PostgreSQL.
pub struct Connection {
    inner: Inner,
}

enum Inner {
    Sqlite(rusqlite::Connection),
    Postgres(Box<pg::Pg>),
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Sqlite(c) => write!(f, "Connection(sqlite: {:?})", c.path()),
            Inner::Postgres(p) => write!(f, "Connection(postgres: {})", p.display),
        }
    }
}

impl From<rusqlite::Connection> for Connection {
    fn from(c: rusqlite::Connection) -> Self {
        Connection { inner: Inner::Sqlite(c) }
    }
}

impl Connection {
    pub(crate) fn from_postgres(pg: pg::Pg) -> Self {
        Connection { inner: Inner::Postgres(Box::new(pg)) }
    }

    pub fn backend(&self) -> Backend {
        match &self.inner {
            Inner::Sqlite(_) => Backend::Sqlite,
            Inner::Postgres(_) => Backend::Postgres,
        }
    }

    pub fn is_postgres(&self) -> bool {
        self.backend() == Backend::Postgres
    }

    /// The SQLite connection, for what only SQLite has (PRAGMAs, FTS5, hooks).
    pub fn sqlite(&self) -> Option<&rusqlite::Connection> {
        match &self.inner {
            Inner::Sqlite(c) => Some(c),
            Inner::Postgres(_) => None,
        }
    }

    pub(crate) fn postgres(&self) -> Option<&pg::Pg> {
        match &self.inner {
            Inner::Postgres(p) => Some(p),
            Inner::Sqlite(_) => None,
        }
    }

    /// Whether the nearest vectors come from the server's HNSW index (a team server with
    /// pgvector) rather than from Lethe's own scan of the stored vectors.
    pub fn vector_search_on_server(&self) -> bool {
        self.postgres().is_some_and(|p| p.vector_search.get())
    }

    /// The SQLite connection, or a typed error naming what the team store lacks.
    pub fn sqlite_only(&self, what: &str) -> Result<&rusqlite::Connection> {
        self.sqlite()
            .ok_or_else(|| Error::invalid(format!("{what} works on an SQLite file only, not on a team server")))
    }

    /// The file's path (SQLite); `None` in memory and on a server.
    pub fn path(&self) -> Option<&str> {
        self.sqlite().and_then(|c| c.path())
    }

    /// A bare SQLite file, as another program opens it: no PRAGMAs, no migrations (tests that
    /// play the other program; Lethe itself opens files with [`crate::store::open`]).
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Ok(rusqlite::Connection::open(path)?.into())
    }

    /// A bare SQLite database in memory, without Lethe's schema (tests of the seam itself).
    pub fn open_in_memory() -> Result<Self> {
        Ok(rusqlite::Connection::open_in_memory()?.into())
    }

    /// Where the connection points: a file's path, or the server without its password.
    pub fn describe(&self) -> String {
        match &self.inner {
            Inner::Sqlite(c) => c.path().unwrap_or(":memory:").to_string(),
            Inner::Postgres(p) => p.display.clone(),
        }
    }

    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(Statement { inner: StmtInner::Sqlite(c.prepare(sql)?) }),
            Inner::Postgres(p) => Ok(Statement { inner: StmtInner::Postgres { pg: p, stmt: p.prepare(sql)? } }),
        }
    }

    pub fn prepare_cached(&self, sql: &str) -> Result<Statement<'_>> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(Statement { inner: StmtInner::SqliteCached(c.prepare_cached(sql)?) }),
            Inner::Postgres(p) => Ok(Statement { inner: StmtInner::Postgres { pg: p, stmt: p.prepare(sql)? } }),
        }
    }

    pub fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        self.prepare(sql)?.execute(params)
    }

    pub fn query_row<T, P: Params, F: FnOnce(&Row<'_>) -> Result<T>>(&self, sql: &str, params: P, f: F) -> Result<T> {
        self.prepare(sql)?.query_row(params, f)
    }

    /// Runs statements separated by `;` with no parameters.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Inner::Postgres(p) => p.batch(sql),
        }
    }

    /// Whether no transaction is open.
    pub fn is_autocommit(&self) -> bool {
        match &self.inner {
            Inner::Sqlite(c) => c.is_autocommit(),
            Inner::Postgres(p) => !p.in_tx.get(),
        }
    }

    /// Opens a transaction by hand (see [`Connection::transaction`] for the guarded form).
    pub fn begin(&self, behavior: TransactionBehavior) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(c.execute_batch(match behavior {
                TransactionBehavior::Deferred => "BEGIN DEFERRED",
                TransactionBehavior::Immediate => "BEGIN IMMEDIATE",
            })?),
            Inner::Postgres(p) => p.begin(match behavior {
                TransactionBehavior::Deferred => "BEGIN ISOLATION LEVEL REPEATABLE READ",
                TransactionBehavior::Immediate => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            }),
        }
    }

    pub fn commit(&self) -> Result<()> {
        match &self.inner {
            Inner::Sqlite(c) => Ok(c.execute_batch("COMMIT")?),
            Inner::Postgres(p) => p.commit(),
        }
    }

    pub fn rollback(&self) -> Result<()> {
        let out = self.execute_batch("ROLLBACK");
        if let Some(p) = self.postgres() {
            p.in_tx.set(false);
        }
        out
    }

    pub fn transaction(&mut self) -> Result<Transaction<'_>> {
        self.transaction_with_behavior(TransactionBehavior::Deferred)
    }

    pub fn transaction_with_behavior(&mut self, behavior: TransactionBehavior) -> Result<Transaction<'_>> {
        self.begin(behavior)?;
        Ok(Transaction { conn: self, done: Cell::new(false) })
    }

    /// A transaction on a shared connection (the caller makes sure none is open).
    pub fn unchecked_transaction(&self) -> Result<Transaction<'_>> {
        self.begin(TransactionBehavior::Deferred)?;
        Ok(Transaction { conn: self, done: Cell::new(false) })
    }
}

/// An open transaction; rolled back when dropped without [`Transaction::commit`].
pub struct Transaction<'c> {
    conn: &'c Connection,
    done: Cell<bool>,
}

impl Transaction<'_> {
    pub fn commit(self) -> Result<()> {
        self.done.set(true);
        self.conn.commit()
    }

    pub fn rollback(self) -> Result<()> {
        self.done.set(true);
        self.conn.rollback()
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.done.get() {
            let _ = self.conn.rollback();
        }
    }
}

/// `.optional()` on a query that may find no row.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoRows) | Err(Error::Db(rusqlite::Error::QueryReturnedNoRows)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The PostgreSQL side of the seam.
pub(crate) mod pg {
    use super::*;
    use postgres::types::{IsNull, Type};

    pub(crate) struct Pg {
        pub(crate) client: RefCell<postgres::Client>,
        stmts: RefCell<HashMap<String, postgres::Statement>>,
        pub(crate) in_tx: Cell<bool>,
        /// The server and database, without the password (for messages and the window).
        pub(crate) display: String,
        /// `lethe_vector.emb` exists: the server has pgvector and an HNSW index for recall.
        pub(crate) vector_search: Cell<bool>,
        /// How to connect again when the connection is lost (its hosts, in order; the
        /// password stays in here and `Config`'s `Debug` hides it).
        config: postgres::Config,
        /// The session's settings, set again on every new connection.
        session: RefCell<Vec<String>>,
        /// How many times the connection was made anew: a listener compares it to know that
        /// its `LISTEN` went with the old connection.
        pub(crate) epoch: Cell<u64>,
        /// A statement found the connection gone: the next one outside a transaction
        /// connects again, whatever the driver says of it.
        lost: Cell<bool>,
    }

    /// Whether an error means the connection itself is gone (the server died, was shut down,
    /// or the network dropped), rather than a statement failing on a live connection.
    fn connection_gone(e: &postgres::Error) -> bool {
        if e.is_closed() {
            return true;
        }
        match e.code().map(|c| c.code()) {
            Some(code) => code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03"),
            None => {
                let mut source = std::error::Error::source(e);
                while let Some(s) = source {
                    if s.is::<std::io::Error>() {
                        return true;
                    }
                    source = s.source();
                }
                false
            }
        }
    }

    impl Pg {
        pub(crate) fn new(client: postgres::Client, config: postgres::Config, display: String) -> Self {
            Pg {
                client: RefCell::new(client),
                stmts: RefCell::new(HashMap::new()),
                in_tx: Cell::new(false),
                display,
                vector_search: Cell::new(false),
                config,
                session: RefCell::new(Vec::new()),
                epoch: Cell::new(0),
                lost: Cell::new(false),
            }
        }

        /// Runs a session setting now and again on every new connection.
        pub(crate) fn session(&self, sql: &str) -> Result<()> {
            self.batch(sql)?;
            self.session.borrow_mut().push(sql.to_string());
            Ok(())
        }

        /// Connects again (to whichever host accepts, within the process's wait) and sets
        /// the session up as before. Only between transactions.
        fn reconnect(&self) -> Result<()> {
            let client = crate::storage::postgres::connect_client(&self.config, &self.display)?;
            let old = std::mem::replace(&mut *self.client.borrow_mut(), client);
            drop(old);
            self.stmts.borrow_mut().clear();
            self.epoch.set(self.epoch.get() + 1);
            self.lost.set(false);
            for sql in self.session.borrow().iter() {
                self.client.borrow_mut().batch_execute(sql)?;
            }
            Ok(())
        }

        /// Before a statement outside a transaction: a connection known to be gone is made
        /// anew first (a long-running process outlives its server's failover).
        fn revive(&self) -> Result<()> {
            if !self.in_tx.get() && (self.lost.get() || self.client.borrow().is_closed()) {
                self.reconnect()?;
            }
            Ok(())
        }

        /// The error of a statement, told apart by what the caller may do next: on a lost
        /// connection inside a transaction, run it again (the server dropped it); on one lost
        /// during a commit or outside a transaction, nothing may be claimed as written.
        fn fail(&self, e: postgres::Error, committing: bool) -> Error {
            if !connection_gone(&e) && !self.client.borrow().is_closed() {
                return Error::Pg(e);
            }
            self.stmts.borrow_mut().clear();
            let why = crate::storage::postgres::message(&e);
            let server = &self.display;
            self.lost.set(true);
            if committing {
                Error::CommitLost(format!(
                    "the team server {server} went away during a commit ({why}): whether that write was stored is unknown, \
                     so it is not reported as stored; running it again stores it at most once"
                ))
            } else if self.in_tx.get() {
                Error::ConnectionLost(format!("the connection to the team server {server} was lost ({why})"))
            } else {
                Error::Unavailable(format!(
                    "the connection to the team server {server} was lost ({why}); the next call connects again"
                ))
            }
        }

        pub(crate) fn prepare(&self, sql: &str) -> Result<postgres::Statement> {
            self.revive()?;
            if let Some(s) = self.stmts.borrow().get(sql) {
                return Ok(s.clone());
            }
            let prepared = self.client.borrow_mut().prepare(&placeholders(&dialect(sql)));
            let stmt = prepared.map_err(|e| self.fail(e, false))?;
            self.stmts.borrow_mut().insert(sql.to_string(), stmt.clone());
            Ok(stmt)
        }

        pub(crate) fn execute(&self, stmt: &postgres::Statement, values: &[ValueRef<'_>]) -> Result<usize> {
            let args: Vec<Arg> = values.iter().map(|v| Arg(*v)).collect();
            let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = args.iter().map(|a| a as _).collect();
            let out = self.client.borrow_mut().execute(stmt, &refs);
            Ok(out.map_err(|e| self.fail(e, false))? as usize)
        }

        pub(crate) fn query(&self, stmt: &postgres::Statement, values: &[ValueRef<'_>]) -> Result<Vec<postgres::Row>> {
            let args: Vec<Arg> = values.iter().map(|v| Arg(*v)).collect();
            let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = args.iter().map(|a| a as _).collect();
            let out = self.client.borrow_mut().query(stmt, &refs);
            out.map_err(|e| self.fail(e, false))
        }

        pub(crate) fn batch(&self, sql: &str) -> Result<()> {
            self.revive()?;
            self.run_batch(sql, false)
        }

        fn run_batch(&self, sql: &str, committing: bool) -> Result<()> {
            let out = self.client.borrow_mut().batch_execute(sql);
            match out {
                Ok(()) => Ok(()),
                Err(e) => {
                    // A failed statement inside a transaction leaves it aborted; the schema may
                    // also have changed, so prepared statements are prepared again.
                    self.stmts.borrow_mut().clear();
                    Err(self.fail(e, committing))
                }
            }
        }

        /// Opens a transaction; a connection found gone at its start is made anew once and
        /// the transaction opened there (nothing was sent that could have been written).
        pub(crate) fn begin(&self, sql: &str) -> Result<()> {
            self.revive()?;
            match self.run_batch(sql, false) {
                Err(Error::Unavailable(_)) => {
                    self.reconnect()?;
                    self.run_batch(sql, false)
                }
                other => other,
            }?;
            self.in_tx.set(true);
            Ok(())
        }

        /// Ends the transaction with `COMMIT`; a connection lost here leaves the outcome
        /// unknown ([`Error::Unavailable`], never retried by the caller).
        pub(crate) fn commit(&self) -> Result<()> {
            let out = self.run_batch("COMMIT", self.in_tx.get());
            self.in_tx.set(false);
            out
        }
    }

    /// The key of each table the engine writes with SQLite's `INSERT OR REPLACE`, and whether
    /// the table has a `rowid` column (a replaced row gets a new one, as in SQLite). On the
    /// team store a key that holds a memory's id or rowid also holds the team (two teams may
    /// hold the same id, and neither can tell whether the other does).
    const REPLACE_KEYS: &[(&str, &str, bool)] = &[
        ("lethe_recall_log_hit", "memory_id, log_id, team", false),
        ("lethe_neighbour", "memory_rowid, team", false),
        ("lethe_vector", "memory_id, team", true),
        ("lethe_signature", "memory_id, team", false),
        ("lethe_meta", "key", false),
        ("lethe_settings", "team, key", false),
    ];

    /// SQLite's `INSERT OR IGNORE` and `INSERT OR REPLACE` in PostgreSQL's words (`ON
    /// CONFLICT`), and an upsert on a memory's id on the key the team store has for it (the
    /// id and the team); every other statement is written in the dialect both accept.
    pub(crate) fn dialect(sql: &str) -> std::borrow::Cow<'_, str> {
        let trimmed = sql.trim_start();
        for target in ["ON CONFLICT(memory_id)", "ON CONFLICT (memory_id)"] {
            if trimmed.contains(target) {
                return trimmed.replace(target, "ON CONFLICT (memory_id, team)").into();
            }
        }
        if let Some(rest) = trimmed.strip_prefix("INSERT OR IGNORE INTO ") {
            let (body, returning) = split_returning(rest);
            return format!("INSERT INTO {body} ON CONFLICT DO NOTHING{returning}").into();
        }
        if let Some(rest) = trimmed.strip_prefix("INSERT OR REPLACE INTO ") {
            let table = rest.split(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
            let Some((_, key, has_rowid)) = REPLACE_KEYS.iter().find(|(t, _, _)| *t == table) else {
                return sql.into();
            };
            let cols: Vec<&str> = rest
                .split_once('(')
                .and_then(|(_, r)| r.split_once(')'))
                .map(|(c, _)| c.split(',').map(str::trim).collect())
                .unwrap_or_default();
            let keys: Vec<&str> = key.split(',').map(str::trim).collect();
            let mut sets: Vec<String> =
                cols.iter().filter(|c| !keys.contains(c)).map(|c| format!("{c} = EXCLUDED.{c}")).collect();
            if *has_rowid {
                sets.push("rowid = DEFAULT".into());
            }
            let (body, returning) = split_returning(rest);
            let action =
                if sets.is_empty() { "DO NOTHING".to_string() } else { format!("DO UPDATE SET {}", sets.join(", ")) };
            return format!("INSERT INTO {body} ON CONFLICT ({key}) {action}{returning}").into();
        }
        sql.into()
    }

    fn split_returning(sql: &str) -> (&str, &str) {
        match sql.rfind(" RETURNING ") {
            Some(i) => (&sql[..i], &sql[i..]),
            None => (sql.trim_end(), ""),
        }
    }

    /// `?N` and `?` become `$N`; quoted text and identifiers are left alone.
    pub(crate) fn placeholders(sql: &str) -> String {
        let mut out = String::with_capacity(sql.len() + 8);
        let mut next = 0usize;
        let mut chars = sql.chars().peekable();
        let mut quote: Option<char> = None;
        while let Some(c) = chars.next() {
            if let Some(q) = quote {
                out.push(c);
                if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '\'' | '"' => {
                    quote = Some(c);
                    out.push(c);
                }
                '?' => {
                    let mut digits = String::new();
                    while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                        digits.push(*d);
                        chars.next();
                    }
                    let n = if digits.is_empty() {
                        next += 1;
                        next
                    } else {
                        let n: usize = digits.parse().unwrap_or(0);
                        next = next.max(n);
                        n
                    };
                    out.push('$');
                    out.push_str(&n.to_string());
                }
                _ => out.push(c),
            }
        }
        out
    }

    fn is_text(ty: &Type) -> bool {
        *ty == Type::TEXT || *ty == Type::VARCHAR || *ty == Type::BPCHAR || *ty == Type::NAME || *ty == Type::UNKNOWN
    }

    /// One column of a PostgreSQL row as a [`ValueRef`], by its declared type.
    pub(crate) fn value<'a>(row: &'a postgres::Row, i: usize) -> Result<ValueRef<'a>> {
        let Some(col) = row.columns().get(i) else { return Err(Error::column(format!("no column {i}"))) };
        let ty = col.type_();
        macro_rules! read {
            ($t:ty, $f:expr) => {
                match row.try_get::<_, Option<$t>>(i)? {
                    None => ValueRef::Null,
                    Some(v) => $f(v),
                }
            };
        }
        Ok(if *ty == Type::INT8 {
            read!(i64, ValueRef::Integer)
        } else if *ty == Type::INT4 {
            read!(i32, |v| ValueRef::Integer(v as i64))
        } else if *ty == Type::INT2 {
            read!(i16, |v| ValueRef::Integer(v as i64))
        } else if *ty == Type::OID {
            read!(u32, |v| ValueRef::Integer(v as i64))
        } else if *ty == Type::BOOL {
            read!(bool, |v| ValueRef::Integer(v as i64))
        } else if *ty == Type::FLOAT8 {
            read!(f64, ValueRef::Real)
        } else if *ty == Type::FLOAT4 {
            read!(f32, |v| ValueRef::Real(v as f64))
        } else if is_text(ty) {
            read!(&str, |v: &'a str| ValueRef::Text(v.as_bytes()))
        } else if *ty == Type::BYTEA {
            read!(&[u8], ValueRef::Blob)
        } else {
            return Err(Error::column(format!(
                "column {} has type {ty}, which Lethe does not read (cast it in the query)",
                col.name()
            )));
        })
    }

    /// A parameter encoded for the type PostgreSQL expects at its place.
    #[derive(Debug)]
    struct Arg<'a>(ValueRef<'a>);

    type BoxError = Box<dyn std::error::Error + Sync + Send>;

    fn enc<T: postgres::types::ToSql>(
        v: T,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, BoxError> {
        v.to_sql(ty, out)
    }

    impl postgres::types::ToSql for Arg<'_> {
        fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> std::result::Result<IsNull, BoxError> {
            let wrong =
                || -> BoxError { format!("a {} value cannot go into a {ty} parameter", self.0.type_name()).into() };
            match self.0 {
                ValueRef::Null => Ok(IsNull::Yes),
                ValueRef::Integer(v) => {
                    if *ty == Type::INT8 {
                        enc(v, ty, out)
                    } else if *ty == Type::INT4 {
                        enc(i32::try_from(v)?, ty, out)
                    } else if *ty == Type::INT2 {
                        enc(i16::try_from(v)?, ty, out)
                    } else if *ty == Type::FLOAT8 {
                        enc(v as f64, ty, out)
                    } else if *ty == Type::FLOAT4 {
                        enc(v as f32, ty, out)
                    } else if *ty == Type::BOOL {
                        enc(v != 0, ty, out)
                    } else if is_text(ty) {
                        enc(v.to_string(), ty, out)
                    } else {
                        Err(wrong())
                    }
                }
                ValueRef::Real(v) => {
                    if *ty == Type::FLOAT8 {
                        enc(v, ty, out)
                    } else if *ty == Type::FLOAT4 {
                        enc(v as f32, ty, out)
                    } else if is_text(ty) {
                        enc(v.to_string(), ty, out)
                    } else {
                        Err(wrong())
                    }
                }
                ValueRef::Text(s) => {
                    if is_text(ty) {
                        enc(std::str::from_utf8(s)?, ty, out)
                    } else {
                        Err(wrong())
                    }
                }
                ValueRef::Blob(b) => {
                    if *ty == Type::BYTEA {
                        enc(b, ty, out)
                    } else {
                        Err(wrong())
                    }
                }
            }
        }

        fn accepts(_: &Type) -> bool {
            true
        }

        postgres::types::to_sql_checked!();
    }

    #[cfg(test)]
    mod tests {
        use super::placeholders;

        #[test]
        fn sqlite_conflict_clauses_become_postgresql_ones() {
            use super::dialect;
            assert_eq!(
                dialect("INSERT OR IGNORE INTO lethe_review (memory_id, entered_at) VALUES (?1, ?2)"),
                "INSERT INTO lethe_review (memory_id, entered_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING"
            );
            assert_eq!(
                dialect("INSERT OR REPLACE INTO lethe_vector (memory_id, model, vec) VALUES (?1, ?2, ?3)"),
                "INSERT INTO lethe_vector (memory_id, model, vec) VALUES (?1, ?2, ?3) ON CONFLICT (memory_id, team) \
                 DO UPDATE SET model = EXCLUDED.model, vec = EXCLUDED.vec, rowid = DEFAULT"
            );
            assert_eq!(
                dialect(
                    "INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3) \
                     ON CONFLICT(memory_id) DO UPDATE SET content_hash = excluded.content_hash"
                ),
                "INSERT INTO lethe_signature (memory_id, content_hash, bands) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (memory_id, team) DO UPDATE SET content_hash = excluded.content_hash",
                "a memory's key on the team store holds its team"
            );
            assert_eq!(dialect("SELECT 1"), "SELECT 1");
        }

        #[test]
        fn placeholders_become_numbered_outside_quotes() {
            assert_eq!(placeholders("SELECT ?1, ?2, ?1"), "SELECT $1, $2, $1");
            assert_eq!(placeholders("SELECT ?, ?"), "SELECT $1, $2");
            assert_eq!(placeholders("SELECT '?1' || ?1"), "SELECT '?1' || $1");
            assert_eq!(placeholders("SELECT \"a?\" FROM t WHERE x = ?3"), "SELECT \"a?\" FROM t WHERE x = $3");
        }
    }
}
