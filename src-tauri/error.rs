//! The one error the webview sees: `{ code, message }` with a small closed set of codes.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiError {
    pub code: &'static str,
    pub message: String,
}

impl From<lethe_engine::Error> for ApiError {
    fn from(e: lethe_engine::Error) -> Self {
        let code = match e.code() {
            c @ ("invalid_input" | "conflict" | "not_found" | "confirmation_required" | "db_unavailable") => c,
            // Another program holding the file is, for a person, the database being unavailable.
            "busy" => "db_unavailable",
            _ => "internal",
        };
        ApiError { code, message: e.to_string() }
    }
}

impl ApiError {
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError { code: "db_unavailable", message: message.into() }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_is_pinned() {
        let e: ApiError = lethe_engine::Error::NotFound("memory mem_x".into()).into();
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"code": "not_found", "message": "not found: memory mem_x"})
        );
        let busy: ApiError = lethe_engine::Error::Cancelled.into();
        assert_eq!(busy.code, "internal", "codes outside the closed set collapse to internal");
    }
}
