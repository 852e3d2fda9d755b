//! hackbench ([`Source::Hackbench`](crate::engine::work::Source::Hackbench)): seed 000's and
//! seed 001's messaging load.
//!
//! Sources: hackbench.c (LTP and rt-tests) and perf's `sched messaging`, the same program:
//! per group, `num_fds` (20) receivers, each with its own socket pair (or pipe), created
//! first, then 20 senders; each sender writes, `loops` times, one 100-byte message to each of
//! its group's receivers in turn; each receiver reads `20 * loops` messages. A write blocks
//! while the receiver's buffer is full, a read while it is empty; both wake the other side
//! with a sync wakeup (`wake_up_interruptible_sync_poll`).
//!
//! The model: one [`Channel`] per receiver, shared by its group's senders. A write takes its
//! room when it begins (the kernel charges the socket's send buffer when it allocates the
//! message), takes `write_ns` of CPU, and makes the message readable when it ends, waking a
//! sleeping reader. A read takes the oldest message when it begins, takes `read_ns`, and frees
//! its room when it ends, waking the sleeping writers once at most `wake_writers_at` messages
//! are left (all of them for a socket, one for a pipe, which wakes the next). A woken task's
//! next stretch is nothing: it runs and tries again, as a woken writer retries its write.
//! Each receiver checks that it gets every sender's messages once and in order; a message out
//! of order is an invariant violation.
//!
//! Continuous runs (`loops` 0) start over forever and are measured in messages read a second;
//! closed runs end when every task has exited. hackbench's start-up handshake (every task
//! reports ready, then all start together) is left out: each task starts when it first runs.

use super::SyncSt;
use crate::engine::Engine;
use crate::engine::block::Step;
use crate::engine::work::{Buffer, Hackbench};
use nohz::Policy;
use std::collections::{BTreeMap, VecDeque};

/// A message: the sender's index in its group, and the round it was written in.
type Msg = (usize, u32);

/// One receiver's buffer and who sleeps on it.
#[derive(Debug, Clone)]
pub(super) struct Channel {
    buf: Buffer,
    /// Written messages, oldest first.
    queued: VecDeque<Msg>,
    /// Writes under way (their room taken).
    writing: usize,
    /// Reads under way (their room not yet freed).
    reading: usize,
    /// The reader, asleep on an empty buffer.
    reader: Option<usize>,
    /// Writers asleep on a full buffer, in the order they slept.
    writers: VecDeque<usize>,
}

impl Channel {
    pub(super) fn new(buf: Buffer) -> Self {
        Channel {
            buf,
            queued: VecDeque::new(),
            writing: 0,
            reading: 0,
            reader: None,
            writers: VecDeque::new(),
        }
    }

    /// Messages holding room: written, being written or being read.
    pub(super) fn used(&self) -> usize {
        self.queued.len() + self.writing + self.reading
    }

    /// A write begins if there is room (it holds its room from now on); false: the writer
    /// must sleep ([`Channel::sleep_writer`]).
    pub(super) fn begin_write(&mut self) -> bool {
        if self.used() >= self.buf.capacity {
            return false;
        }
        self.writing += 1;
        true
    }

    /// A write ends: `m` is readable. Returns the tasks to wake: the sleeping reader, and
    /// with a pipe's rule the next sleeping writer while room is left.
    pub(super) fn end_write(&mut self, m: Msg) -> Vec<usize> {
        self.writing -= 1;
        self.queued.push_back(m);
        let mut wake: Vec<usize> = self.reader.take().into_iter().collect();
        if !self.buf.wake_all_writers && self.used() < self.buf.capacity {
            wake.extend(self.writers.pop_front());
        }
        wake
    }

    /// A read begins: the oldest message, or none (the reader must sleep,
    /// [`Channel::sleep_reader`]).
    pub(super) fn begin_read(&mut self) -> Option<Msg> {
        let m = self.queued.pop_front()?;
        self.reading += 1;
        Some(m)
    }

    /// A read ends: its room is free. Returns the sleeping writers to wake: a socket's, all
    /// of them after every read that leaves it at or below its mark (`unix_write_space` runs
    /// as each message is freed); a pipe's, one, when this read brings it to its mark (a page
    /// of a full pipe freed).
    pub(super) fn end_read(&mut self) -> Vec<usize> {
        self.reading -= 1;
        let at = self.buf.wake_writers_at;
        if self.writers.is_empty() || self.used() > at {
            return Vec::new();
        }
        if self.buf.wake_all_writers {
            self.writers.drain(..).collect()
        } else if self.used() == at {
            self.writers.pop_front().into_iter().collect()
        } else {
            Vec::new()
        }
    }

    /// Writer `t` sleeps until a read makes room.
    pub(super) fn sleep_writer(&mut self, t: usize) {
        self.writers.push_back(t);
    }

    /// Reader `t` sleeps until a write.
    pub(super) fn sleep_reader(&mut self, t: usize) {
        self.reader = Some(t);
    }
}

/// A task's part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Sender(usize),
    Receiver(usize),
}

#[derive(Debug, Clone)]
struct Sender {
    group: usize,
    /// Its index in its group (the `from` of its messages).
    me: usize,
    /// The round it writes (its messages' sequence number).
    round: u32,
    /// The receiver of its group it writes to next.
    next: usize,
    /// A write is under way.
    writing: bool,
}

#[derive(Debug, Clone)]
struct Receiver {
    /// The round expected next from each sender of its group.
    expect: Vec<u32>,
    /// The message being read.
    reading: Option<Msg>,
    received: u64,
}

/// hackbench's state: every group's tasks and buffers.
#[derive(Debug)]
pub(in crate::engine) struct Groups {
    role: BTreeMap<usize, Role>,
    senders: Vec<Sender>,
    receivers: Vec<Receiver>,
    /// Receiver `k`'s buffer (group `k / fds`).
    chans: Vec<Channel>,
}

impl Groups {
    /// Sender `k` ended a stretch: its write ends (and it moves on to its next receiver),
    /// then its next write begins or it sleeps; exits after its last round.
    fn sender(&mut self, k: usize, t: usize, h: &Hackbench, wake: &mut Vec<usize>) -> Step {
        let s = &mut self.senders[k];
        let base = s.group * h.fds;
        if s.writing {
            s.writing = false;
            wake.extend(self.chans[base + s.next].end_write((s.me, s.round)));
            s.next += 1;
            if s.next == h.fds {
                s.next = 0;
                s.round += 1;
                if h.loops > 0 && s.round == h.loops {
                    return Step::Exit;
                }
            }
        }
        let ch = &mut self.chans[base + s.next];
        if ch.begin_write() {
            s.writing = true;
            Step::Run(h.write_ns)
        } else {
            ch.sleep_writer(t);
            Step::Block
        }
    }

    /// Receiver `k` ended a stretch: its read ends (checked against each sender's order),
    /// then its next read begins or it sleeps; exits once it has every message of a closed
    /// run. Returns the step and, for a message out of order, what was wrong.
    fn receiver(
        &mut self,
        k: usize,
        t: usize,
        h: &Hackbench,
        wake: &mut Vec<usize>,
        read: &mut u64,
    ) -> (Step, Option<String>) {
        let r = &mut self.receivers[k];
        let ch = &mut self.chans[k];
        let mut wrong = None;
        if let Some((from, round)) = r.reading.take() {
            wake.extend(ch.end_read());
            if r.expect[from] != round {
                wrong = Some(format!(
                    "hackbench receiver {k} read round {round} of sender {from}, expected {}",
                    r.expect[from]
                ));
            }
            r.expect[from] = round + 1;
            r.received += 1;
            *read += 1;
            if h.loops > 0 && r.received == (h.fds as u64) * u64::from(h.loops) {
                return (Step::Exit, wrong);
            }
        }
        let step = match ch.begin_read() {
            Some(m) => {
                r.reading = Some(m);
                Step::Run(h.read_ns)
            }
            None => {
                ch.sleep_reader(t);
                Step::Block
            }
        };
        (step, wrong)
    }
}

impl<P: Policy, const HZ: u32> Engine<P, HZ> {
    /// hackbench at boot: each group's receivers, then its senders, forked from the
    /// benchmark's CPU; each acts when it first runs.
    pub(super) fn start_hackbench(&self, src: usize, h: Hackbench) {
        let fds = h.fds.max(1);
        self.current.set(Some(h.on));
        let mut g = Groups {
            role: BTreeMap::new(),
            senders: Vec::new(),
            receivers: Vec::new(),
            chans: Vec::new(),
        };
        for group in 0..h.groups {
            for _ in 0..fds {
                let t = self.spawn(src, h.on, 0);
                g.role.insert(t, Role::Receiver(g.receivers.len()));
                g.receivers.push(Receiver {
                    expect: vec![0; fds],
                    reading: None,
                    received: 0,
                });
                g.chans.push(Channel::new(h.buffer));
                self.fork(h.on, t);
            }
            for me in 0..fds {
                let t = self.spawn(src, h.on, 0);
                g.role.insert(t, Role::Sender(g.senders.len()));
                g.senders.push(Sender {
                    group,
                    me,
                    round: 0,
                    next: 0,
                    writing: false,
                });
                self.fork(h.on, t);
            }
        }
        self.syncs.borrow_mut()[src] = SyncSt::Hackbench(g);
    }

    /// Task `t` of the hackbench of source `src` ended a stretch on `c`.
    pub(super) fn hackbench_step(&self, c: usize, t: usize, src: usize, h: Hackbench) -> Step {
        let h = Hackbench {
            fds: h.fds.max(1),
            ..h
        };
        let mut wake = Vec::new();
        let mut read = 0;
        let (step, wrong) = {
            let mut syncs = self.syncs.borrow_mut();
            let SyncSt::Hackbench(g) = &mut syncs[src] else {
                return Step::Exit;
            };
            match g.role[&t] {
                Role::Sender(k) => (g.sender(k, t, &h, &mut wake), None),
                Role::Receiver(k) => g.receiver(k, t, &h, &mut wake, &mut read),
            }
        };
        self.count(|n| {
            n.work_done += read as f64;
            n.checks += read;
        });
        if let Some(what) = wrong {
            self.record_violation(format!("at {} ns: {what}", self.now()));
        }
        for w in wake {
            self.set_left(w, 0);
            self.wake_up(w, c, true);
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Buffer = Buffer {
        capacity: 4,
        wake_writers_at: 1,
        wake_all_writers: true,
    };

    #[test]
    fn a_full_buffer_blocks_writers_until_reads_bring_it_to_its_mark() {
        let mut ch = Channel::new(SMALL);
        for round in 0..4 {
            assert!(ch.begin_write(), "room for write {round}");
            assert!(ch.end_write((0, round)).is_empty(), "no one asleep");
        }
        assert!(!ch.begin_write(), "four messages fill it");
        ch.sleep_writer(7);
        ch.sleep_writer(8);
        // A read under way still holds its room.
        assert_eq!(ch.begin_read(), Some((0, 0)));
        assert!(!ch.begin_write());
        assert!(ch.end_read().is_empty(), "3 left, above the mark of 1");
        assert_eq!(ch.begin_read(), Some((0, 1)));
        assert!(ch.end_read().is_empty(), "2 left");
        assert_eq!(ch.begin_read(), Some((0, 2)));
        assert_eq!(ch.end_read(), [7, 8], "at the mark: every writer, in order");
        assert!(ch.begin_write());
    }

    #[test]
    fn an_empty_buffer_blocks_its_reader_until_a_write_ends() {
        let mut ch = Channel::new(SMALL);
        assert_eq!(ch.begin_read(), None);
        ch.sleep_reader(3);
        assert!(ch.begin_write());
        // The message is readable only once written.
        assert_eq!(ch.begin_read(), None);
        assert_eq!(ch.end_write((5, 0)), [3]);
        assert_eq!(ch.begin_read(), Some((5, 0)));
        assert!(ch.begin_write());
        assert!(ch.end_write((5, 1)).is_empty(), "the reader is awake");
    }

    #[test]
    fn a_pipe_wakes_one_writer_which_wakes_the_next() {
        let mut ch = Channel::new(Buffer {
            capacity: 3,
            wake_writers_at: 2,
            wake_all_writers: false,
        });
        for round in 0..3 {
            assert!(ch.begin_write());
            ch.end_write((0, round));
        }
        ch.sleep_writer(1);
        ch.sleep_writer(2);
        ch.begin_read();
        assert_eq!(ch.end_read(), [1], "one writer at the mark");
        ch.begin_read();
        ch.end_read();
        // Writer 1 writes; room is left, so it wakes writer 2.
        assert!(ch.begin_write());
        assert_eq!(ch.end_write((1, 0)), [2]);
    }

    fn groups(fds: usize, buf: Buffer) -> Groups {
        Groups {
            role: BTreeMap::new(),
            senders: (0..fds)
                .map(|me| Sender {
                    group: 0,
                    me,
                    round: 0,
                    next: 0,
                    writing: false,
                })
                .collect(),
            receivers: (0..fds)
                .map(|_| Receiver {
                    expect: vec![0; fds],
                    reading: None,
                    received: 0,
                })
                .collect(),
            chans: (0..fds).map(|_| Channel::new(buf)).collect(),
        }
    }

    #[test]
    fn a_group_delivers_every_message_once_in_each_senders_order() {
        // Two senders, two receivers, three rounds, room for one message: every write but
        // the first waits for a read. The steps are driven in a fixed interleaving; each
        // woken task is stepped again, as the engine runs it.
        let h = Hackbench {
            on: 0,
            groups: 1,
            fds: 2,
            loops: 3,
            write_ns: 10,
            read_ns: 10,
            buffer: Buffer {
                capacity: 1,
                wake_writers_at: 0,
                wake_all_writers: true,
            },
        };
        let mut g = groups(2, h.buffer);
        // Tasks 0, 1: senders; 10, 11: receivers.
        let task = |r: Role| match r {
            Role::Sender(k) => k,
            Role::Receiver(k) => 10 + k,
        };
        let mut runnable: VecDeque<Role> = [
            Role::Receiver(0),
            Role::Receiver(1),
            Role::Sender(0),
            Role::Sender(1),
        ]
        .into();
        let mut exited = 0;
        let mut read = 0;
        let mut steps = 0;
        while let Some(r) = runnable.pop_front() {
            steps += 1;
            assert!(steps < 1_000, "stuck");
            let mut wake = Vec::new();
            let step = match r {
                Role::Sender(k) => g.sender(k, task(r), &h, &mut wake),
                Role::Receiver(k) => {
                    let (step, wrong) = g.receiver(k, task(r), &h, &mut wake, &mut read);
                    assert_eq!(wrong, None);
                    step
                }
            };
            for w in wake {
                runnable.push_back(if w >= 10 {
                    Role::Receiver(w - 10)
                } else {
                    Role::Sender(w)
                });
            }
            match step {
                Step::Run(_) => runnable.push_back(r),
                Step::Block => {}
                Step::Exit => exited += 1,
            }
        }
        assert_eq!(exited, 4, "every task finished");
        assert_eq!(read, 2 * 2 * 3, "each sender's 3 rounds to each receiver");
        for r in &g.receivers {
            assert_eq!(r.expect, [3, 3], "every round of every sender, in order");
        }
        assert!(g.chans.iter().all(|c| c.used() == 0));
    }

    #[test]
    fn a_message_out_of_order_is_reported() {
        let h = Hackbench {
            on: 0,
            groups: 1,
            fds: 1,
            loops: 0,
            write_ns: 10,
            read_ns: 10,
            buffer: SMALL,
        };
        let mut g = groups(1, SMALL);
        g.chans[0].queued.push_back((0, 1));
        let (mut wake, mut read) = (Vec::new(), 0);
        assert_eq!(g.receiver(0, 5, &h, &mut wake, &mut read).0, Step::Run(10));
        let (_, wrong) = g.receiver(0, 5, &h, &mut wake, &mut read);
        assert!(
            wrong
                .unwrap()
                .contains("read round 1 of sender 0, expected 0")
        );
    }
}
