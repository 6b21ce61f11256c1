//! Spec errors at the command line: printed with their source snippets on stderr.

use orchestrate::spec::SpecErrors;

/// Prints spec errors with their source snippets; `None` if there were any.
pub fn report_spec_errors<T>(r: Result<T, SpecErrors>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(errors) => {
            eprint!("{}", errors.render());
            None
        }
    }
}
