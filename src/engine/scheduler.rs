//! Bounded concurrency: a fixed number of workers per group (one group per provider) pull items
//! from a shared queue until it is empty or the run is stopping. Results reach one consumer, in
//! completion order. Also the `Stop` signal (Ctrl-C or a fatal provider error).

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Why a run stopped early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// Ctrl-C.
    Interrupted,
    /// A provider failure that affects every item (auth, quota, unknown model).
    Fatal(String),
    /// A local file could not be written (the cache, the records): exit 1, not a provider's
    /// refusal.
    Io(String),
}

/// A shared stop signal: once set (or once the deadline passes), no new item starts; items in
/// flight finish.
#[derive(Debug, Default)]
pub struct Stop {
    flag: AtomicBool,
    reason: Mutex<Option<StopReason>>,
    deadline: Option<std::time::Instant>,
}

impl Stop {
    /// A stop signal that also trips at `deadline`.
    pub fn with_deadline(deadline: Option<std::time::Instant>) -> Self {
        Stop {
            deadline,
            ..Stop::default()
        }
    }

    /// The overall deadline, if any.
    pub fn deadline(&self) -> Option<std::time::Instant> {
        self.deadline
    }

    /// Whether the deadline has passed.
    pub fn past_deadline(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }

    /// Requests a stop; the first reason wins.
    pub fn request(&self, reason: StopReason) {
        let mut r = self
            .reason
            .lock()
            .expect("stop lock is never poisoned: no panics inside");
        if r.is_none() {
            *r = Some(reason);
        }
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was requested.
    pub fn is_stopping(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The reason, if stopped.
    pub fn reason(&self) -> Option<StopReason> {
        self.reason
            .lock()
            .expect("stop lock is never poisoned: no panics inside")
            .clone()
    }
}

/// A group of items processed by at most `concurrency` workers at once.
#[derive(Debug)]
pub struct Group<I> {
    pub concurrency: usize,
    pub items: Vec<I>,
}

/// Runs `work` over every item of every group, calling `on_result` on the caller's task for
/// each result as it arrives (at most 256 results wait for it; workers then pause). Returns when every worker has finished.
pub async fn run_groups<I, R, F, Fut>(
    groups: Vec<Group<I>>,
    stop: Arc<Stop>,
    work: F,
    mut on_result: impl FnMut(R),
) where
    I: Send + 'static,
    R: Send + 'static,
    F: Fn(I) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = R> + Send,
{
    // Bounded: fast workers wait for the consumer instead of piling results up in memory.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<R>(256);
    let mut workers = tokio::task::JoinSet::new();
    for group in groups {
        let n = group.concurrency.max(1).min(group.items.len());
        let queue = Arc::new(Mutex::new(VecDeque::from(group.items)));
        for _ in 0..n {
            let (queue, stop, work, tx) = (queue.clone(), stop.clone(), work.clone(), tx.clone());
            workers.spawn(async move {
                loop {
                    if stop.is_stopping() || stop.past_deadline() {
                        break;
                    }
                    let next = queue
                        .lock()
                        .expect("queue lock is never poisoned")
                        .pop_front();
                    let Some(item) = next else { break };
                    if tx.send(work(item).await).await.is_err() {
                        break;
                    }
                }
            });
        }
    }
    drop(tx);
    while let Some(r) = rx.recv().await {
        on_result(r);
    }
    while let Some(joined) = workers.join_next().await {
        if let Err(e) = joined
            && e.is_panic()
        {
            std::panic::resume_unwind(e.into_panic());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[tokio::test]
    async fn respects_concurrency_and_processes_everything() {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(Stop::default());
        let (f, p) = (in_flight.clone(), peak.clone());
        let mut got = Vec::new();
        run_groups(
            vec![Group {
                concurrency: 3,
                items: (0..20).collect::<Vec<u32>>(),
            }],
            stop,
            move |i| {
                let (f, p) = (f.clone(), p.clone());
                async move {
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    f.fetch_sub(1, Ordering::SeqCst);
                    i
                }
            },
            |r| got.push(r),
        )
        .await;
        got.sort_unstable();
        assert_eq!(got, (0..20).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn stop_prevents_new_items() {
        let stop = Arc::new(Stop::default());
        let s = stop.clone();
        let mut got = Vec::new();
        run_groups(
            vec![Group {
                concurrency: 1,
                items: (0..10).collect::<Vec<u32>>(),
            }],
            stop.clone(),
            move |i| {
                let s = s.clone();
                async move {
                    if i == 2 {
                        s.request(StopReason::Interrupted);
                    }
                    i
                }
            },
            |r| got.push(r),
        )
        .await;
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(stop.reason(), Some(StopReason::Interrupted));
    }
}
