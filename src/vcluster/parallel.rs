//! Doing one thing for many containers a few at a time: the host has few cores and the
//! engine serialises much of its work, so a bounded width gains all there is to gain without
//! hundreds of processes or threads at once.

use rayon::prelude::*;

use super::error::{Error, Result};

/// Runs `f` on every item, at most `width` at once; the first error stops the rest from
/// starting and is returned.
pub fn try_for_each<T, F>(width: usize, items: &[T], f: F) -> Result<()>
where
    T: Sync,
    F: Fn(&T) -> Result<()> + Sync + Send,
{
    pool(width, items.len())?.install(|| items.par_iter().try_for_each(f))
}

/// Like [`try_for_each`], keeping every item's result in order.
pub fn try_map<T, U, F>(width: usize, items: &[T], f: F) -> Result<Vec<U>>
where
    T: Sync,
    U: Send,
    F: Fn(&T) -> Result<U> + Sync + Send,
{
    pool(width, items.len())?.install(|| items.par_iter().map(f).collect())
}

/// A pool of its own for each call, so that the width holds whatever else runs.
fn pool(width: usize, items: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(width.clamp(1, items.max(1)))
        .build()
        .map_err(|e| Error::Host {
            problem: format!("cannot start {width} threads: {e}"),
            what_to_do: "check the process and thread limits (ulimit -u)".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn never_more_than_width_at_once_and_results_in_order() {
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let items: Vec<usize> = (0..40).collect();
        let out = try_map(3, &items, |&i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(i * 2)
        })
        .unwrap();
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?} at once");
    }

    #[test]
    fn an_error_is_returned() {
        let items: Vec<usize> = (0..10).collect();
        let r = try_for_each(4, &items, |&i| {
            if i == 7 {
                Err(Error::Wiring(format!("item {i}")))
            } else {
                Ok(())
            }
        });
        assert!(matches!(r, Err(Error::Wiring(m)) if m == "item 7"));
    }
}
