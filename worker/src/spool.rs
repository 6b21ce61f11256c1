//! What `filecopy` may write on a serving node: each session's file is at most
//! `per_session` bytes, the files of all running sessions together at most `total`, and a
//! file is taken on only if the spool's filesystem has room for it. A session reserves its
//! announced file size when it starts and gives it back when it ends, so the bound holds before
//! a byte is written.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The spool's limits and what running sessions hold of them.
#[derive(Debug)]
pub struct SpoolBudget {
    dir: PathBuf,
    per_session: u64,
    total: u64,
    reserved: Mutex<u64>,
}

/// Bytes held by one session until it is dropped.
#[derive(Debug)]
pub struct SpoolLease {
    budget: Arc<SpoolBudget>,
    bytes: u64,
}

impl SpoolBudget {
    pub fn new(dir: PathBuf, per_session: u64, total: u64) -> Arc<SpoolBudget> {
        Arc::new(SpoolBudget {
            dir,
            per_session,
            total,
            reserved: Mutex::new(0),
        })
    }

    /// Holds `bytes` for one session's file, or says why it does not fit.
    pub fn reserve(self: &Arc<Self>, bytes: u64) -> Result<SpoolLease, String> {
        if bytes > self.per_session {
            return Err(format!(
                "a file of {bytes} bytes exceeds this server's {} bytes per session",
                self.per_session
            ));
        }
        let mut reserved = self.reserved.lock().unwrap_or_else(|p| p.into_inner());
        if reserved.saturating_add(bytes) > self.total {
            return Err(format!(
                "the spool is full: running copies hold {} of its {} bytes, {bytes} more do not fit",
                *reserved, self.total
            ));
        }
        if let Some(free) = free_bytes(&self.dir).filter(|&f| f < bytes) {
            return Err(format!(
                "{} has {free} bytes free, the file needs {bytes}",
                self.dir.display()
            ));
        }
        *reserved += bytes;
        Ok(SpoolLease {
            budget: self.clone(),
            bytes,
        })
    }

    /// Bytes held by running sessions.
    pub fn reserved(&self) -> u64 {
        *self.reserved.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for SpoolLease {
    fn drop(&mut self) {
        let mut r = self
            .budget
            .reserved
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *r -= self.bytes;
    }
}

/// Bytes an unprivileged writer may still use on the filesystem holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct we own; the path is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_add_up_to_the_total_and_are_given_back() {
        let b = SpoolBudget::new(std::env::temp_dir(), 100, 150);
        let first = b.reserve(100).unwrap();
        assert!(b.reserve(60).unwrap_err().contains("spool is full"));
        let second = b.reserve(50).unwrap();
        assert_eq!(b.reserved(), 150);
        drop(first);
        drop(second);
        assert_eq!(b.reserved(), 0);
        assert!(b.reserve(101).unwrap_err().contains("per session"));
    }

    #[test]
    fn a_file_larger_than_the_free_space_is_refused() {
        let b = SpoolBudget::new(std::env::temp_dir(), u64::MAX, u64::MAX);
        let err = b.reserve(u64::MAX / 2).unwrap_err();
        assert!(err.contains("bytes free"), "{err}");
    }
}
