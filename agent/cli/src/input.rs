//! Loading the profiles the reading commands take, with the loaders' warnings on stderr.

use std::path::Path;

use hpm_core::cct::Cct;

/// A loaded profile: metadata when the source has any, the tree, and component counts.
pub(crate) type Input = hpm_core::load::Profile;

/// Loads `.jfr` or collapsed stacks. With `threads`, the tree gets a `[name tid=N]` level
/// under the root (JFR only: collapsed stacks carry no thread information).
pub(crate) fn load_input(path: &str, threads: bool) -> Result<Input, String> {
    load_input_from(path, threads, None)
}

/// [`load_input`], keeping only the samples from the phase marker `from_phase` on (`NAME` or
/// `NAME=INDEX`, the Java bridge's `hpm.Phase` events; `.jfr` only). Warnings (an incomplete
/// last chunk, the samples left out) go to stderr.
pub(crate) fn load_input_from(path: &str, threads: bool, from_phase: Option<&str>) -> Result<Input, String> {
    let input = hpm_core::load::load_profile(path, threads, from_phase)?;
    warn(&input.notes);
    Ok(input)
}

/// Prints the loaders' warnings, one line each.
pub(crate) fn warn(notes: &[String]) {
    for n in notes {
        eprintln!("hpm: {n}");
    }
}

/// Loads a profile as a calling context tree, refusing empty ones.
pub(crate) fn load_profile(path: &str) -> Result<Cct, String> {
    let p = Path::new(path);
    if p.is_dir() {
        return Err(format!("`{path}` is a directory; give a .jfr or collapsed-stacks file"));
    }
    let (cct, notes) = hpm_core::load::load_cct(p).map_err(|e| e.to_string())?;
    warn(&notes);
    if cct.total_samples() == 0 {
        return Err(format!("{path}: the profile has no samples"));
    }
    Ok(cct)
}
