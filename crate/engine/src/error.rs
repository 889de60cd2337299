//! The engine's errors: each has a stable [`Error::code`] that the bindings carry to JavaScript,
//! where it picks the error class (`InvalidError` for `invalid`, and so on).

use std::fmt;

/// What went wrong, with the bad value where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Input out of its domain: a name, a limit, a duration. The message names the value.
    Invalid(String),
    /// A bound reached: waiters on one key, fences of a store. The message names the bound.
    Limit(String),
    /// The engine was closed.
    Closed,
}

impl Error {
    /// The stable code, as the JavaScript errors carry it.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::Limit(_) => "limit",
            Error::Closed => "closed",
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::Invalid(message.into())
    }

    pub(crate) fn limit(message: impl Into<String>) -> Error {
        Error::Limit(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Invalid(message) | Error::Limit(message) => f.write_str(message),
            Error::Closed => f.write_str("the store is closed"),
        }
    }
}

impl std::error::Error for Error {}
