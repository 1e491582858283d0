//! Losses and notes: what the sources reported as `Loss` records, split into data that was lost
//! and reports that lost nothing.
//!
//! The model has one record for both: a `Loss` with a cause and a count. Some causes count
//! items that were kept, only placed differently: a CPU sampling source's Python frames that it put
//! at the outer end of a stack whose native walk ended early are all there, in a place it says.
//! Those are notes, listed apart from the losses and left out of `lost_total`. They are named
//! here, once, by the start of their cause (a source's stable phrase), until the model gives
//! `Loss` a field saying which it is.

/// Causes (their start) that lost nothing.
const NOTE_CAUSES: &[&str] = &["Python frames put at the stack's outer end"];

/// True when a `Loss` with this cause lost nothing.
pub fn is_note(cause: &str) -> bool {
    NOTE_CAUSES.iter().any(|n| cause.starts_with(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_reports_are_notes() {
        assert!(is_note(
            "Python frames put at the stack's outer end: the native walk ended before the interpreter"
        ));
        assert!(!is_note("Python stacks cut short: frame chain unreadable or deeper than 256 frames"));
        assert!(!is_note("acme dropped records"));
    }
}
