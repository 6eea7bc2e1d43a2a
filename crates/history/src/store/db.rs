//! One connection to the history database, SQLite or PostgreSQL, behind the few operations the
//! store needs: run a statement, run a query whose column types the caller names, and
//! transactions. Statements are written once for both: parameters are `$1`, `$2`, … in order
//! of first use (SQLite numbers `$N` parameters by first appearance, so positional binding
//! works the same), and the schema's few type names differ by [`Dialect`] only.
//!
//! It knows nothing of runs or cells; [`super::Store`] writes the SQL.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::HistoryError;

/// How long a writer waits for another writer's transaction before giving up (SQLite's busy
/// timeout). A run's transaction takes well under a second; a minute covers a CI fleet's jobs
/// adding at once on one file.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// The SQL dialect: the column types and the statements that differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// SQLite 3 (the bundled library).
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A value bound to a statement or read from a row: typed even when NULL, because PostgreSQL
/// checks every parameter's type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    /// BIGINT.
    Int(Option<i64>),
    /// REAL / DOUBLE PRECISION.
    Real(Option<f64>),
    /// TEXT.
    Text(Option<String>),
    /// BLOB / BYTEA.
    Blob(Option<Vec<u8>>),
}

impl Value {
    /// A non-NULL integer.
    pub(crate) fn int(v: i64) -> Value {
        Value::Int(Some(v))
    }

    /// A non-NULL text.
    pub(crate) fn text(v: impl Into<String>) -> Value {
        Value::Text(Some(v.into()))
    }

    /// The integer, or `None` for NULL or another type.
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => *v,
            _ => None,
        }
    }

    /// The number, or `None`.
    pub(crate) fn as_real(&self) -> Option<f64> {
        match self {
            Value::Real(v) => *v,
            Value::Int(v) => v.map(|v| v as f64),
            _ => None,
        }
    }

    /// The text, or `None`.
    pub(crate) fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(v) => v.as_deref(),
            _ => None,
        }
    }

    /// The text, or an empty string.
    pub(crate) fn text_or_empty(&self) -> String {
        self.as_text().unwrap_or_default().to_owned()
    }

    /// The bytes, or `None`.
    pub(crate) fn into_blob(self) -> Option<Vec<u8>> {
        match self {
            Value::Blob(v) => v,
            _ => None,
        }
    }
}

/// The type of a column a query reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// BIGINT.
    Int,
    /// REAL / DOUBLE PRECISION.
    Real,
    /// TEXT.
    Text,
    /// BLOB / BYTEA.
    Blob,
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Value::Int(v) => v.to_sql(),
            Value::Real(v) => v.to_sql(),
            Value::Text(v) => v.to_sql(),
            Value::Blob(v) => v.to_sql(),
        }
    }
}

/// An open connection.
pub(crate) enum Db {
    /// An SQLite file.
    Sqlite {
        /// The connection.
        conn: rusqlite::Connection,
        /// The file, for messages.
        path: PathBuf,
    },
    /// A PostgreSQL server.
    Postgres {
        /// The connection.
        client: Box<postgres::Client>,
        /// The URL without its password, for messages.
        url: String,
    },
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.location())
    }
}

impl Db {
    /// Opens (creating when missing) the SQLite file `path`, whose directory exists.
    pub(crate) fn open_sqlite(path: PathBuf) -> Result<Db, HistoryError> {
        let opened = rusqlite::Connection::open(&path).and_then(|conn| {
            conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
            Ok(conn)
        });
        let conn = opened.map_err(|source| Self::sqlite_err(&path, "open", source))?;
        let mut db = Db::Sqlite { conn, path };
        // Cells go with their run; the rollback journal (the default) keeps the database one
        // file. `synchronous = FULL` so a committed run survives a power cut.
        db.batch(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL;",
            "open",
        )?;
        Ok(db)
    }

    /// Connects to the PostgreSQL server at `url` (without TLS).
    pub(crate) fn open_postgres(url: &str, shown: String) -> Result<Db, HistoryError> {
        let client = postgres::Client::connect(url, postgres::NoTls).map_err(|source| {
            HistoryError::Postgres {
                url: shown.clone(),
                action: "connect",
                source,
            }
        })?;
        Ok(Db::Postgres {
            client: Box::new(client),
            url: shown,
        })
    }

    /// The dialect.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Db::Sqlite { .. } => Dialect::Sqlite,
            Db::Postgres { .. } => Dialect::Postgres,
        }
    }

    /// The database's file or URL, for messages.
    pub(crate) fn location(&self) -> String {
        match self {
            Db::Sqlite { path, .. } => path.display().to_string(),
            Db::Postgres { url, .. } => url.clone(),
        }
    }

    fn sqlite_err(
        path: &std::path::Path,
        action: &'static str,
        source: rusqlite::Error,
    ) -> HistoryError {
        HistoryError::Sqlite {
            path: path.to_path_buf(),
            action,
            source,
        }
    }

    fn pg_err(url: &str, action: &'static str, source: postgres::Error) -> HistoryError {
        HistoryError::Postgres {
            url: url.to_owned(),
            action,
            source,
        }
    }

    /// Runs statements without parameters, separated by `;`.
    pub(crate) fn batch(&mut self, sql: &str, action: &'static str) -> Result<(), HistoryError> {
        match self {
            Db::Sqlite { conn, path } => conn
                .execute_batch(sql)
                .map_err(|e| Self::sqlite_err(path, action, e)),
            Db::Postgres { client, url } => client
                .batch_execute(sql)
                .map_err(|e| Self::pg_err(url, action, e)),
        }
    }

    /// Runs one statement; returns the rows it changed.
    pub(crate) fn execute(
        &mut self,
        sql: &str,
        params: &[Value],
        action: &'static str,
    ) -> Result<u64, HistoryError> {
        match self {
            Db::Sqlite { conn, path } => {
                let mut stmt = conn
                    .prepare_cached(sql)
                    .map_err(|e| Self::sqlite_err(path, action, e))?;
                stmt.execute(rusqlite::params_from_iter(params.iter()))
                    .map(|n| n as u64)
                    .map_err(|e| Self::sqlite_err(path, action, e))
            }
            Db::Postgres { client, url } => {
                let refs = pg_params(params);
                client
                    .execute(sql, &refs)
                    .map_err(|e| Self::pg_err(url, action, e))
            }
        }
    }

    /// Runs a query and reads its rows, each column as `kinds` says.
    pub(crate) fn query(
        &mut self,
        sql: &str,
        params: &[Value],
        kinds: &[Kind],
        action: &'static str,
    ) -> Result<Vec<Vec<Value>>, HistoryError> {
        match self {
            Db::Sqlite { conn, path } => {
                let mut stmt = conn
                    .prepare_cached(sql)
                    .map_err(|e| Self::sqlite_err(path, action, e))?;
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(params.iter()), |row| {
                        kinds
                            .iter()
                            .enumerate()
                            .map(|(i, k)| {
                                Ok(match k {
                                    Kind::Int => Value::Int(row.get(i)?),
                                    Kind::Real => Value::Real(row.get(i)?),
                                    Kind::Text => Value::Text(row.get(i)?),
                                    Kind::Blob => Value::Blob(row.get(i)?),
                                })
                            })
                            .collect::<rusqlite::Result<Vec<Value>>>()
                    })
                    .map_err(|e| Self::sqlite_err(path, action, e))?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
                    .map_err(|e| Self::sqlite_err(path, action, e))
            }
            Db::Postgres { client, url } => {
                let refs = pg_params(params);
                let rows = client
                    .query(sql, &refs)
                    .map_err(|e| Self::pg_err(url, action, e))?;
                rows.iter()
                    .map(|row| {
                        kinds
                            .iter()
                            .enumerate()
                            .map(|(i, k)| {
                                Ok(match k {
                                    Kind::Int => Value::Int(row.try_get(i)?),
                                    Kind::Real => Value::Real(row.try_get(i)?),
                                    Kind::Text => Value::Text(row.try_get(i)?),
                                    Kind::Blob => Value::Blob(row.try_get(i)?),
                                })
                            })
                            .collect::<Result<Vec<Value>, postgres::Error>>()
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| Self::pg_err(url, action, e))
            }
        }
    }

    /// Starts a transaction. SQLite's is `IMMEDIATE`: it takes the write lock at once, so two
    /// writers queue (the busy timeout) instead of one failing when it upgrades a read lock.
    pub(crate) fn begin(&mut self) -> Result<(), HistoryError> {
        match self.dialect() {
            Dialect::Sqlite => self.batch("BEGIN IMMEDIATE", "start a transaction"),
            Dialect::Postgres => self.batch("BEGIN", "start a transaction"),
        }
    }

    /// Commits the transaction.
    pub(crate) fn commit(&mut self) -> Result<(), HistoryError> {
        self.batch("COMMIT", "commit")
    }

    /// Rolls the transaction back; a failure to do so is left to the connection's end (both
    /// databases roll back an open transaction when the connection goes).
    pub(crate) fn rollback(&mut self) {
        let _ = self.batch("ROLLBACK", "roll back");
    }

    /// Runs `f` in a transaction: committed when it returns `Ok`, rolled back otherwise.
    pub(crate) fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Db) -> Result<T, HistoryError>,
    ) -> Result<T, HistoryError> {
        self.begin()?;
        match f(self) {
            Ok(v) => {
                if let Err(e) = self.commit() {
                    self.rollback();
                    return Err(e);
                }
                Ok(v)
            }
            Err(e) => {
                self.rollback();
                Err(e)
            }
        }
    }
}

/// Whether `e` is a unique-constraint violation (another writer stored the same key first).
pub(crate) fn is_unique_violation(e: &HistoryError) -> bool {
    match e {
        HistoryError::Sqlite {
            source: rusqlite::Error::SqliteFailure(f, _),
            ..
        } => f.code == rusqlite::ErrorCode::ConstraintViolation,
        HistoryError::Postgres { source, .. } => {
            source.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION)
        }
        _ => false,
    }
}

/// The parameters as PostgreSQL takes them.
fn pg_params(params: &[Value]) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|v| -> &(dyn postgres::types::ToSql + Sync) {
            match v {
                Value::Int(v) => v,
                Value::Real(v) => v,
                Value::Text(v) => v,
                Value::Blob(v) => v,
            }
        })
        .collect()
}
