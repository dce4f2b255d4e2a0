//! Loading profiles from files for the analysis commands: `.jfr` (ours or the JDK's) and
//! collapsed stacks (`frame;frame;frame count` per line, as async-profiler and FlameGraph write).

use std::fmt;
use std::path::Path;

use crate::cct::Cct;

#[derive(Debug, Clone, PartialEq)]
pub struct LoadError {
    pub path: String,
    /// 1-based line for text formats, 0 when not line-related.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.path, self.line, self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for LoadError {}

/// Loads a profile as a calling context tree. The format is chosen by the extension
/// (`.jfr`; anything else is read as collapsed stacks).
pub fn load_cct(path: &Path) -> Result<Cct, LoadError> {
    let p = path.display().to_string();
    if path.extension().and_then(|e| e.to_str()) == Some("jfr") {
        let rec = crate::jfr::read_recording(path).map_err(|m| LoadError { path: p.clone(), line: 0, message: m })?;
        return Ok(Cct::from_recording(&rec, false));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| LoadError { path: p.clone(), line: 0, message: e.to_string() })?;
    parse_collapsed(&text).map_err(|(line, message)| LoadError { path: p, line, message })
}

/// Parses collapsed stacks. Blank lines and lines starting with `#` are skipped.
pub fn parse_collapsed(text: &str) -> Result<Cct, (usize, String)> {
    let mut cct = Cct::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (stack, count) = line.rsplit_once(' ').ok_or((i + 1, "expected `frame;frame;... count`".to_string()))?;
        let count: u64 = count.parse().map_err(|_| (i + 1, format!("sample count `{count}` is not a whole number")))?;
        let frames: Vec<&str> = stack.split(';').filter(|f| !f.is_empty()).collect();
        if frames.is_empty() {
            return Err((i + 1, "empty stack".to_string()));
        }
        cct.add_stack(&frames, count, count, &[]);
    }
    Ok(cct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapsed_round_trip_counts() {
        let c = parse_collapsed("main;a;b 3\nmain;c 2\n\n# comment\n").unwrap();
        assert_eq!(c.total_samples(), 5);
    }

    #[test]
    fn collapsed_errors_name_the_line() {
        assert_eq!(parse_collapsed("main;a 1\nmain;b x\n").unwrap_err().0, 2);
        assert_eq!(parse_collapsed("nocount\n").unwrap_err().0, 1);
    }
}
