//! Input files that cannot hang or flood a reader: every reader of a file a user names opens
//! it here. A named pipe would block the reader for ever, a device (a link to `/dev/zero`)
//! would feed it without end: anything but a regular file is refused with one line, checked on
//! the descriptor opened (no check-then-open race), and no more than the size it had then is
//! read. The input side of [`crate::outfile`].

use std::path::Path;

/// Opens a file a reader reads, refusing anything but a regular file: a named pipe would hang
/// the reader, a device (a link to `/dev/zero`) would feed it without end. The file is opened
/// first (without waiting for a pipe's writer, and never becoming a controlling terminal) and
/// its open descriptor looked at, so what is checked is what is read. Returns the file and its
/// size; readers read no more than that size.
pub fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, u64)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = file.metadata()?;
    let t = meta.file_type();
    let what = if t.is_file() {
        return Ok((file, meta.len()));
    } else if t.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a directory, not a file; give a file in it",
        ));
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{what}, not a file; hpm reads regular files only: copy the data into a file and give that"),
    ))
}

/// The bytes of a regular file ([`open_regular`]), at most the size it had when opened.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let (file, len) = open_regular(path)?;
    let mut out = Vec::with_capacity(len as usize);
    file.take(len).read_to_end(&mut out)?;
    Ok(out)
}

/// [`read_regular`] as UTF-8 text.
pub fn read_regular_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_regular(path)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read() {
        let dir = crate::scratch_tests::ScratchDir::new("regular");
        let fifo = dir.join("p.collapsed");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A named pipe with no writer would block the open, then the read, for ever.
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().starts_with("a named pipe, not a file; hpm reads regular files only"), "{e}");
        assert!(crate::load::load_cct(&fifo).unwrap_err().to_string().contains("a named pipe"));
        // A link to a device would feed the reader without end.
        let zero = dir.join("z.jfr");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert!(open_regular(&zero).unwrap_err().to_string().starts_with("a device, not a file"));
        assert!(crate::jfr::read_recording(&zero).unwrap_err().to_string().contains("a device"));
        assert!(open_regular(&dir).unwrap_err().to_string().starts_with("a directory"));
        let file = dir.join("f.collapsed");
        std::fs::write(&file, "a;b 1\n").unwrap();
        assert_eq!(read_regular_text(&file).unwrap(), "a;b 1\n");
    }
}
