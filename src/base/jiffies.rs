//! Jiffies: the tick counter, its wrap-safe comparisons and `msecs_to_jiffies`.
//!
//! C source: `include/linux/jiffies.h`, `kernel/time/time.c` (`time_after`, `msecs_to_jiffies`, `MAX_JIFFY_OFFSET`).
//!
//! # Design
//!
//! The kernel's `jiffies` is an `unsigned long` that only grows and wraps; [`Jiffies`] is a
//! `usize` with wrapping arithmetic and no `Ord`, so the only way to compare two of them is the
//! wrap-safe family [`Jiffies::is_after`] & co. (`time_after` ...). Those read the difference
//! as a signed word, so they are right while the true distance is below half the word range.
//!
//! [`JiffiesCell`] is the shared counter: one timekeeping CPU advances it, everybody reads it
//! with a `Relaxed` load (the kernel's `READ_ONCE(jiffies)`); no data is published through it.
//! It sits on a line of its own so that its once-per-tick write does not disturb neighbours.
//!
//! `HZ` is the platform's associated constant ([`Clock::HZ`](crate::platform::Clock::HZ),
//! default 1000).

use crate::sync::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use core::fmt;
use core::num::NonZeroU32;
use crossbeam_utils::CachePadded;

/// A jiffies value: a tick count that wraps like the kernel's `unsigned long`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Jiffies(usize);

impl Jiffies {
    /// The kernel's `INITIAL_JIFFIES` for a given `HZ`: `-300 * HZ` truncated to 32 bits, so a
    /// 32-bit counter wraps five minutes after boot and wrap bugs show up early. (Zero for an
    /// `HZ` of 0, which no platform may have.)
    #[doc(alias = "INITIAL_JIFFIES")]
    pub const fn initial(hz: u32) -> Jiffies {
        Jiffies(0u32.wrapping_sub(300u32.wrapping_mul(hz)) as usize)
    }

    /// A jiffies value from its raw word.
    #[inline(always)]
    pub const fn new(raw: usize) -> Jiffies {
        Jiffies(raw)
    }

    /// The raw word.
    #[inline(always)]
    pub const fn get(self) -> usize {
        self.0
    }

    /// `self + ticks`, wrapping.
    #[inline(always)]
    pub const fn add(self, ticks: usize) -> Jiffies {
        Jiffies(self.0.wrapping_add(ticks))
    }

    /// `self - ticks`, wrapping.
    #[inline(always)]
    pub const fn sub(self, ticks: usize) -> Jiffies {
        Jiffies(self.0.wrapping_sub(ticks))
    }

    /// Ticks from `earlier` to `self`, wrapping (meaningful when `self` is not before it).
    #[inline(always)]
    pub const fn since(self, earlier: Jiffies) -> usize {
        self.0.wrapping_sub(earlier.0)
    }

    /// `time_after(self, other)`: `self` is strictly later than `other`.
    #[doc(alias = "time_after")]
    #[inline(always)]
    pub const fn is_after(self, other: Jiffies) -> bool {
        (other.0.wrapping_sub(self.0) as isize) < 0
    }

    /// `time_before(self, other)`: `self` is strictly earlier than `other`.
    #[doc(alias = "time_before")]
    #[inline(always)]
    pub const fn is_before(self, other: Jiffies) -> bool {
        other.is_after(self)
    }

    /// `time_after_eq(self, other)`: `self` is `other` or later.
    #[doc(alias = "time_after_eq")]
    #[inline(always)]
    pub const fn is_after_eq(self, other: Jiffies) -> bool {
        (self.0.wrapping_sub(other.0) as isize) >= 0
    }

    /// `time_before_eq(self, other)`: `self` is `other` or earlier.
    #[doc(alias = "time_before_eq")]
    #[inline(always)]
    pub const fn is_before_eq(self, other: Jiffies) -> bool {
        other.is_after_eq(self)
    }
}

impl fmt::Debug for Jiffies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Jiffies({:#x})", self.0)
    }
}

/// `LOAD_AVG_PERIOD`: the PELT half-life in milliseconds, the re-arm period of
/// `nohz.next_blocked`.
#[doc(alias = "LOAD_AVG_PERIOD")]
pub const LOAD_AVG_PERIOD_MS: u32 = 32;

/// The kernel's `MAX_JIFFY_OFFSET`: the largest timeout a conversion returns.
pub const MAX_JIFFY_OFFSET: usize = ((isize::MAX as usize) >> 1) - 1;

/// `msecs_to_jiffies(ms)` at `hz`: rounds up, so a non-zero time never becomes zero ticks
/// (`ceil(ms * hz / 1000)`; 32 ms is 32 ticks at 1000 Hz, 10 at 300, 8 at 250, 4 at 100).
/// Like the kernel, a value that is negative as a C `int` (above `i32::MAX`) or too large
/// saturates at [`MAX_JIFFY_OFFSET`].
pub const fn msecs_to_jiffies(ms: u32, hz: NonZeroU32) -> usize {
    if ms > i32::MAX as u32 {
        return MAX_JIFFY_OFFSET;
    }
    let ticks = (ms as u64 * hz.get() as u64).div_ceil(1000);
    if ticks > MAX_JIFFY_OFFSET as u64 {
        MAX_JIFFY_OFFSET
    } else {
        ticks as usize
    }
}

/// The shared jiffies counter (`jiffies`), on a cache line of its own.
#[doc(alias = "jiffies")]
#[derive(Debug)]
pub struct JiffiesCell(CachePadded<AtomicUsize>);

impl JiffiesCell {
    crate::maybe_const_fn! {
        /// A counter starting at `start` (use [`Jiffies::initial`] to mirror the kernel, or a
        /// value just below the wrap in tests).
        pub fn new(start: Jiffies) -> Self {
            JiffiesCell(CachePadded::new(AtomicUsize::new(start.0)))
        }
    }

    /// The current value (`READ_ONCE(jiffies)`).
    #[inline(always)]
    pub fn get(&self) -> Jiffies {
        Jiffies(self.0.load(Relaxed))
    }

    /// Advances by `ticks` (the timekeeping CPU's `do_timer`), wrapping; returns the new value.
    #[doc(alias = "do_timer")]
    #[inline]
    pub fn advance(&self, ticks: usize) -> Jiffies {
        Jiffies(self.0.fetch_add(ticks, Relaxed).wrapping_add(ticks))
    }

    /// Sets the value (tests and simulated clocks).
    pub fn set(&self, to: Jiffies) {
        self.0.swap(to.0, Relaxed);
    }
}

/// A jiffies timekeeper driven by the monotonic clock, for a kernel that has no jiffies of its
/// own: the three jiffies methods of the platform answer from it
/// ([`Clock::jiffies`](crate::platform::Clock::jiffies) is [`jiffies`](Self::jiffies),
/// [`TickHardware::jiffies_update`](crate::platform::TickHardware::jiffies_update) is
/// [`jiffies_update`](Self::jiffies_update),
/// [`TickHardware::update_jiffies`](crate::platform::TickHardware::update_jiffies) is
/// [`update`](Self::update)), and it keeps them in the agreement the platform owes.
///
/// It keeps one word, the time of the last jiffies update (`last_jiffies_update`), always on
/// the grid of `TICK_NSEC` periods from time 0; jiffies are `INITIAL_JIFFIES` plus the periods
/// it has counted, so the counter and its update time are read together in one load, and no
/// reader ever sees one without the other. [`update`](Self::update) moves the word on by the
/// whole periods elapsed with a compare-exchange, so two CPUs catching jiffies up at once
/// (the timekeeper's tick, and a CPU whose stopped tick an interrupt ends) advance it once.
/// Every access is `Relaxed`: jiffies are a racy read in the kernel too (`READ_ONCE`), and no
/// data is published through them.
///
/// ```
/// use nohz::{Jiffies, Timekeeper};
/// static TIME: Timekeeper<1000> = Timekeeper::new();
/// assert_eq!(TIME.jiffies(), Jiffies::initial(1000));
/// TIME.update(2_500_000); // 2.5 ms: two whole 1 ms periods
/// assert_eq!(TIME.jiffies_update(), (Jiffies::initial(1000).add(2), 2_000_000));
/// ```
#[derive(Debug)]
pub struct Timekeeper<const HZ: u32> {
    last_update: CachePadded<AtomicU64>,
}

impl<const HZ: u32> Timekeeper<HZ> {
    /// `TICK_NSEC` at this `HZ`; a zero `HZ` fails the build where it is used.
    const PERIOD: u64 = {
        assert!(HZ != 0, "Timekeeper<HZ> needs a non-zero HZ");
        crate::platform::tick_nsec(HZ)
    };

    crate::maybe_const_fn! {
        /// Jiffies at `INITIAL_JIFFIES`, last updated at time 0.
        pub fn new() -> Self {
            Timekeeper {
                last_update: CachePadded::new(AtomicU64::new(0)),
            }
        }
    }

    /// Jiffies as of the last update at `last`.
    #[inline(always)]
    fn jiffies_at(last: u64) -> Jiffies {
        Jiffies::initial(HZ).add((last / Self::PERIOD) as usize)
    }

    /// `READ_ONCE(jiffies)`, from any CPU in any context.
    #[inline]
    pub fn jiffies(&self) -> Jiffies {
        Self::jiffies_at(self.last_update.load(Relaxed))
    }

    /// `get_jiffies_update()`: jiffies and the time of their last update, read together.
    #[doc(alias = "get_jiffies_update")]
    #[inline]
    pub fn jiffies_update(&self) -> (Jiffies, u64) {
        let last = self.last_update.load(Relaxed);
        (Self::jiffies_at(last), last)
    }

    /// `tick_do_update_jiffies64(now)`: catch jiffies up to `now` (nanoseconds of the
    /// monotonic clock): if at least one period passed since the last update, jiffies advance
    /// by the whole periods passed. From any CPU with interrupts off; a call finding nothing
    /// to do returns after one load.
    #[doc(alias = "tick_do_update_jiffies64")]
    #[inline]
    pub fn update(&self, now: u64) {
        let mut last = self.last_update.load(Relaxed);
        while now >= last.saturating_add(Self::PERIOD) {
            let next = last + (now - last) / Self::PERIOD * Self::PERIOD;
            match self
                .last_update
                .compare_exchange(last, next, Relaxed, Relaxed)
            {
                Ok(_) => return,
                Err(seen) => last = seen,
            }
        }
    }
}

impl<const HZ: u32> Default for Timekeeper<HZ> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(nohz_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_timekeeper_counts_whole_periods_once() {
        let tk = Timekeeper::<250>::new();
        let start = Jiffies::initial(250);
        assert_eq!(tk.jiffies_update(), (start, 0));
        tk.update(3_999_999);
        assert_eq!(tk.jiffies(), start, "less than one 4 ms period");
        tk.update(9_000_000);
        assert_eq!(tk.jiffies_update(), (start.add(2), 8_000_000));
        tk.update(8_500_000);
        assert_eq!(
            tk.jiffies(),
            start.add(2),
            "an earlier time changes nothing"
        );
        tk.update(u64::MAX);
        let (j, last) = tk.jiffies_update();
        assert_eq!(last % 4_000_000, 0, "on the grid");
        assert_eq!(j, start.add((u64::MAX / 4_000_000) as usize));
        tk.update(u64::MAX);
        assert_eq!(tk.jiffies_update(), (j, last), "nothing left to count");
    }

    const HZ1000: NonZeroU32 = NonZeroU32::new(1000).unwrap();

    #[test]
    fn comparisons_across_the_wrap() {
        let before = Jiffies::new(usize::MAX - 2);
        let after = before.add(5); // wraps to 2
        assert_eq!(after.get(), 2);
        assert!(after.is_after(before));
        assert!(!before.is_after(after));
        assert!(before.is_before(after));
        assert!(!after.is_before(before));
        assert!(after.is_after_eq(before) && after.is_after_eq(after));
        assert!(before.is_before_eq(after) && before.is_before_eq(before));
        assert!(!after.is_after(after) && !after.is_before(after));
        assert!(!before.is_after_eq(after));
        assert_eq!(after.since(before), 5);
        assert_eq!(after.sub(5), before);
    }

    #[test]
    fn half_range_is_the_horizon() {
        let a = Jiffies::new(0);
        let just_inside = a.add(isize::MAX as usize);
        let just_outside = a.add(isize::MAX as usize + 1);
        assert!(just_inside.is_after(a));
        // At half the word range the signed difference flips: the value reads as earlier.
        assert!(just_outside.is_before(a));
    }

    #[test]
    fn msecs_to_jiffies_rounds_up() {
        let hz = |h| NonZeroU32::new(h).unwrap();
        assert_eq!(msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz(1000)), 32);
        assert_eq!(msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz(300)), 10);
        assert_eq!(msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz(250)), 8);
        assert_eq!(msecs_to_jiffies(LOAD_AVG_PERIOD_MS, hz(100)), 4);
        assert_eq!(msecs_to_jiffies(1, hz(100)), 1);
        assert_eq!(msecs_to_jiffies(0, hz(100)), 0);
        assert_eq!(msecs_to_jiffies(3, hz(2000)), 6);
        assert_eq!(msecs_to_jiffies(u32::MAX, HZ1000), MAX_JIFFY_OFFSET);
        assert_eq!(msecs_to_jiffies(i32::MAX as u32, HZ1000), i32::MAX as usize);
    }

    #[test]
    fn initial_jiffies_wraps_32_bits_five_minutes_in() {
        let j = Jiffies::initial(1000);
        assert_eq!(j.get(), (u32::MAX - 300_000 + 1) as usize);
        let five_minutes = j.add(300_000);
        assert_eq!(five_minutes.get() as u32, 0);
        assert!(five_minutes.is_after(j));
    }

    #[test]
    fn the_cell_advances_across_the_wrap() {
        let cell = JiffiesCell::new(Jiffies::new(usize::MAX - 1));
        let start = cell.get();
        assert_eq!(cell.advance(1).get(), usize::MAX);
        assert_eq!(cell.advance(2).get(), 1);
        assert!(cell.get().is_after(start));
        assert_eq!(cell.get().since(start), 3);
        cell.set(Jiffies::new(7));
        assert_eq!(cell.get().get(), 7);
    }
}
