//! Storage: where memories live. `db` is the seam: one [`db::Connection`] over two backends,
//! an SQLite file (`sqlite`: its PRAGMAs, append-only migrations, transactions, the change
//! journal; `watch`: the file watcher that notices other processes' writes) and a PostgreSQL
//! team server (`postgres`: connecting, `lethe admin setup`, its migrations). Everything above
//! this folder reaches the rows through a `Connection` and `ops::rows`. `journal` is a reader's
//! place in the change journal, for those that follow other processes' writes.

pub mod db;
pub mod journal;
pub mod postgres;
pub mod sqlite;
pub mod watch;
