//! How an admitted call ended (DESIGN §1).

/// The outcome of an admitted call. Exactly one per permit.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The call succeeded.
    Success = 0,
    /// The call failed.
    Failure = 1,
    /// The call's result says nothing about the dependency (the caller cancelled,
    /// or the error was one the user marked ignored): it releases what the call
    /// held and counts nowhere but in the lifetime totals.
    Ignored = 2,
}
