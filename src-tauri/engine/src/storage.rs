//! Storage: where memories live. Today one backend, SQLite (`sqlite`: the connection, its
//! PRAGMAs, append-only migrations, transactions, the change journal; `watch`: the file
//! watcher that notices other processes' writes). Everything above this folder reaches the
//! rows through these modules and `ops::rows`.

pub mod sqlite;
pub mod watch;
