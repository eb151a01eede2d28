//! The one error the webview sees: `{ code, message }` with a small closed set of codes.

use serde::Serialize;
use ts_rs::TS;

/// The closed set of error codes the window tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidInput,
    Conflict,
    NotFound,
    ConfirmationRequired,
    Forbidden,
    DbUnavailable,
    Internal,
}

/// What every command rejects with.
#[derive(Debug, Clone, PartialEq, Serialize, TS)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

impl From<lethe_engine::Error> for ApiError {
    fn from(e: lethe_engine::Error) -> Self {
        let code = match e.code() {
            "invalid_input" => ErrorCode::InvalidInput,
            "conflict" => ErrorCode::Conflict,
            "not_found" => ErrorCode::NotFound,
            "confirmation_required" => ErrorCode::ConfirmationRequired,
            "forbidden" => ErrorCode::Forbidden,
            // Another program holding the file is, for a person, the database being unavailable.
            "db_unavailable" | "busy" => ErrorCode::DbUnavailable,
            _ => ErrorCode::Internal,
        };
        ApiError { code, message: e.to_string() }
    }
}

impl ApiError {
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError { code: ErrorCode::DbUnavailable, message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        ApiError { code: ErrorCode::InvalidInput, message: message.into() }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError { code: ErrorCode::Internal, message: message.into() }
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
        assert_eq!(busy.code, ErrorCode::Internal, "codes outside the closed set collapse to internal");
    }
}
