//! stdio for `lethe mcp`, with the robustness rmcp's own stdio transport lacks:
//! every malformed line gets its JSON-RPC error and the server keeps serving (rmcp drops
//! unparsable lines silently and answers unknown shapes with a bare -32600); a line longer
//! than the cap is refused while it is read, never buffered whole; and a read or write
//! failure is remembered so that `lethe mcp` can report an abnormal end.
//!
//! Valid messages go to rmcp unchanged. Responses are written here, one line each under one
//! lock (errors about malformed lines by a writer task of their own, in their lines' order),
//! because an error about a line whose id is unknown must carry `"id": null` (JSON-RPC
//! 2.0 §5), which rmcp's message type cannot express.

use std::sync::{Arc, Mutex};

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Methods a client may send to a server (MCP 2025-11-25): a line naming one of these whose
/// params do not parse is -32602, any other method -32601.
const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/cancel",
];

/// Why serving ended other than by the client closing stdin.
pub type Abnormal = Arc<Mutex<Option<String>>>;

fn note(abnormal: &Abnormal, why: String) {
    let mut slot = abnormal.lock().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(why);
}

/// The errors about malformed lines, in the order of their lines, and the task that writes
/// them.
type ErrorWriter = (tokio::sync::mpsc::UnboundedSender<Vec<u8>>, tokio::task::JoinHandle<()>);

pub struct LineCapped<R: AsyncRead, W: AsyncWrite> {
    read: BufReader<R>,
    line: Vec<u8>,
    cap: usize,
    /// Inside a line already refused as too long, until its newline.
    discarding: bool,
    /// Started at the first error. `receive` hands its errors over instead of writing them:
    /// rmcp may drop a `receive` future at any await (it selects between reading and its
    /// other work), and an error written from there was lost with it when that happened
    /// between taking the line and writing the answer (a client then waited for ever).
    errors: Option<ErrorWriter>,
    out: Arc<tokio::sync::Mutex<W>>,
    abnormal: Abnormal,
}

/// Writes one message as one line.
async fn write_line<W: AsyncWrite + Unpin>(out: &tokio::sync::Mutex<W>, mut line: Vec<u8>) -> std::io::Result<()> {
    line.push(b'\n');
    let mut w = out.lock().await;
    w.write_all(&line).await?;
    w.flush().await
}

enum Read {
    Line,
    TooLong,
    Eof,
}

impl<R, W> LineCapped<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// `cap`: the longest line accepted, in bytes (without its newline).
    pub fn new(read: R, write: W, cap: usize) -> (Self, Abnormal) {
        let abnormal = Abnormal::default();
        let t = LineCapped {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            cap,
            discarding: false,
            errors: None,
            out: Arc::new(tokio::sync::Mutex::new(write)),
            abnormal: Arc::clone(&abnormal),
        };
        (t, abnormal)
    }

    /// One line into `self.line`, never holding more than `cap` bytes of it. Cancel-safe:
    /// bytes are moved from the reader's buffer to `self.line` with no await in between.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let (used, done) = {
                let buf = self.read.fill_buf().await?;
                if buf.is_empty() {
                    return Ok(Read::Eof);
                }
                let newline = buf.iter().position(|&b| b == b'\n');
                let take = newline.map_or(buf.len(), |i| i + 1);
                if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len() + newline.unwrap_or(take) > self.cap {
                    self.line.clear();
                    self.discarding = newline.is_none();
                    (take, Some(Read::TooLong))
                } else {
                    self.line.extend_from_slice(&buf[..take]);
                    (take, newline.map(|_| Read::Line))
                }
            };
            self.read.consume(used);
            if let Some(r) = done {
                return Ok(r);
            }
        }
    }

    /// Queues the error for the writer task, in order, with no await: false once writing to
    /// stdout has failed.
    fn reply(&mut self, error: ErrorData, id: Option<RequestId>) -> bool {
        let id = id.map(RequestId::into_json_value).unwrap_or(Value::Null).to_string();
        self.reply_raw(error, id)
    }

    /// As [`Self::reply`], with the id as JSON text (copied from a line that did not decode).
    fn reply_raw(&mut self, error: ErrorData, id: String) -> bool {
        let error = serde_json::to_string(&error).unwrap_or_else(|_| "{}".into());
        let msg = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{error}}}");
        let (tx, _) = self.errors.get_or_insert_with(|| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
            let (out, abnormal) = (Arc::clone(&self.out), Arc::clone(&self.abnormal));
            let task = tokio::spawn(async move {
                while let Some(line) = rx.recv().await {
                    if let Err(e) = write_line(&out, line).await {
                        note(&abnormal, format!("writing to stdout: {e}"));
                        return;
                    }
                }
            });
            (tx, task)
        });
        tx.send(msg.into_bytes()).is_ok()
    }

    /// The message of one line, or the JSON-RPC error it deserves (None: nothing to say,
    /// e.g. a malformed notification, which JSON-RPC never answers).
    fn classify(line: &[u8]) -> Result<ClientJsonRpcMessage, Option<(ErrorData, Option<RequestId>)>> {
        let line = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line);
        let direct = serde_json::from_slice::<ClientJsonRpcMessage>(line);
        let value: Value = match (direct, serde_json::from_slice::<Value>(line)) {
            (Ok(msg), _) => return Self::known_shape(msg),
            (Err(_), Ok(v)) => v,
            (Err(e), Err(_)) => {
                return Err(Some((ErrorData::new(ErrorCode::PARSE_ERROR, format!("parse error: {e}"), None), None)))
            }
        };
        let id: Option<RequestId> = value.get("id").and_then(|v| serde_json::from_value(v.clone()).ok());
        let Some(obj) = value.as_object() else {
            let msg = "invalid request: a message is one JSON object (batches are not part of MCP)";
            return Err(Some((ErrorData::invalid_request(msg, None), None)));
        };
        let method = obj.get("method").and_then(Value::as_str);
        let why = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).err().map(|e| e.to_string());
        let why = why.unwrap_or_default();
        match (method, &id) {
            // A notification is never answered, even when malformed.
            (Some(_), None) if !obj.contains_key("id") => Err(None),
            (Some(m), _) if CLIENT_METHODS.contains(&m) => {
                Err(Some((ErrorData::invalid_params(format!("invalid params for {m}: {why}"), None), id)))
            }
            (Some(m), Some(_)) => {
                Err(Some((ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("method not found: {m}"), None), id)))
            }
            _ => Err(Some((ErrorData::invalid_request(format!("invalid request: {why}"), None), id))),
        }
    }

    /// rmcp reads any unknown method as a custom request; a known one that landed there had
    /// params that did not fit its own shape.
    fn known_shape(msg: ClientJsonRpcMessage) -> Result<ClientJsonRpcMessage, Option<(ErrorData, Option<RequestId>)>> {
        if let JsonRpcMessage::Request(r) = &msg {
            if let ClientRequest::CustomRequest(c) = &r.request {
                let m = c.method.as_str();
                if CLIENT_METHODS.contains(&m) {
                    let e = ErrorData::invalid_params(format!("invalid params for {m}"), None);
                    return Err(Some((e, Some(r.id.clone()))));
                }
            }
        }
        Ok(msg)
    }
}

/// The id of a line that did not decode, as the client wrote it.
#[derive(Debug, PartialEq)]
enum RawId {
    /// A JSON string (whatever its escapes hold, lone surrogates included) or integer: an
    /// answer can repeat it byte for byte.
    Json(String),
    /// `NaN`, `Infinity`, `1e999`, `1.5` or another token: not an id MCP allows (a string or
    /// an integer), and no JSON answer can carry what the client will look for.
    Unanswerable(String),
}

/// The top-level `"id"` member of a JSON object text that a strict parser refused, read by
/// its syntax only; `None` when the line is not an object or has no id.
fn raw_id(line: &[u8]) -> Option<RawId> {
    let s = std::str::from_utf8(line).ok()?;
    let b = s.as_bytes();
    let ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // Where the string opening at `i` ends (after its closing quote).
    let string_end = |mut i: usize| -> Option<usize> {
        i += 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Some(i + 1),
                _ => i += 1,
            }
        }
        None
    };
    let mut i = 0;
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        ws(&mut i);
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(i)?;
        let key = &s[i..key_end];
        i = key_end;
        ws(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(&mut i);
        let start = i;
        // One value: a string, a nested object or array, or a bare token.
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'"' => {
                    i = string_end(i)?;
                    if depth == 0 {
                        break;
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b',' | b'}' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        let value = s[start..i.min(s.len())].trim_end();
        if key == "\"id\"" {
            let digits = value.strip_prefix('-').unwrap_or(value);
            let integer = !digits.is_empty()
                && digits.bytes().all(|c| c.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'))
                && value.parse::<i64>().is_ok();
            let string = value.len() >= 2
                && value.starts_with('"')
                && string_end(start) == Some(start + value.len())
                && !value.bytes().any(|c| c < 0x20);
            return Some(if integer || string {
                RawId::Json(value.to_string())
            } else {
                RawId::Unanswerable(value.chars().take(40).collect())
            });
        }
        ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            _ => return None,
        }
    }
}

impl<R, W> Transport<RoleServer> for LineCapped<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = Arc::clone(&self.out);
        let abnormal = Arc::clone(&self.abnormal);
        let line = serde_json::to_vec(&item).map_err(std::io::Error::other);
        async move {
            let r = match line {
                Ok(line) => write_line(&out, line).await,
                Err(e) => Err(e),
            };
            if let Err(e) = &r {
                note(&abnormal, format!("writing to stdout: {e}"));
            }
            r
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let eof = match self.read_line().await {
                Ok(Read::Line) => false,
                Ok(Read::Eof) => true,
                Ok(Read::TooLong) => {
                    let msg = format!("invalid request: a line of more than {} bytes is refused", self.cap);
                    if !self.reply(ErrorData::invalid_request(msg, None), None) {
                        return None;
                    }
                    continue;
                }
                Err(e) => {
                    note(&self.abnormal, format!("reading stdin: {e}"));
                    return None;
                }
            };
            // A last line without its newline still counts.
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if !text.iter().all(u8::is_ascii_whitespace) {
                match Self::classify(text) {
                    Ok(msg) => {
                        self.line = line;
                        self.line.clear();
                        return Some(msg);
                    }
                    // A line that is not JSON (a lone surrogate escape, `NaN`, `1e999`) may
                    // still name its id: the error carries that id's text as sent, so the
                    // client can match it; an id that no JSON answer can carry ends the
                    // session, so the client is not left waiting for an answer.
                    Err(Some((error, None))) if error.code == ErrorCode::PARSE_ERROR => match raw_id(text) {
                        Some(RawId::Json(id)) => {
                            if !self.reply_raw(error, id) {
                                return None;
                            }
                        }
                        Some(RawId::Unanswerable(token)) => {
                            let msg = format!(
                                "{}; its id {token} is not a JSON string or integer, so no answer can name it: \
                                 the session ends here",
                                error.message
                            );
                            self.reply(ErrorData::new(ErrorCode::PARSE_ERROR, msg, None), None);
                            note(&self.abnormal, format!("a request's id ({token}) could not be answered"));
                            return None;
                        }
                        None => {
                            if !self.reply(error, None) {
                                return None;
                            }
                        }
                    },
                    Err(Some((error, id))) => {
                        if !self.reply(error, id) {
                            return None;
                        }
                    }

                    Err(None) => {}
                }
            }
            self.line = line;
            self.line.clear();
            if eof {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // The errors still queued are written first.
        if let Some((tx, task)) = self.errors.take() {
            drop(tx);
            let _ = task.await;
        }
        self.out.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::{raw_id, RawId};

    #[test]
    fn the_id_of_an_undecodable_line_is_read_as_written() {
        let j = |s: &str| Some(RawId::Json(s.to_string()));
        let u = |s: &str| Some(RawId::Unanswerable(s.to_string()));
        assert_eq!(raw_id(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"q":"\ud800"}}"#), j("7"));
        assert_eq!(raw_id(br#"{"params":{"id":1,"a":[1,{"b":"}"}]},"id":"\ud800x"}"#), j(r#""\ud800x""#));
        assert_eq!(raw_id(br#"{"jsonrpc":"2.0","id":NaN,"method":"ping"}"#), u("NaN"));
        assert_eq!(raw_id(br#"{"jsonrpc":"2.0","id":1e999,"method":"ping"}"#), u("1e999"));
        assert_eq!(raw_id(br#"{"id":-Infinity}"#), u("-Infinity"));
        assert_eq!(raw_id(br#"{"id":99999999999999999999}"#), u("99999999999999999999"));
        assert_eq!(raw_id(b"{not json"), None);
        assert_eq!(raw_id(br#"{"method":"ping"}"#), None);
        assert_eq!(raw_id(b"[1, 2"), None);
    }
}
