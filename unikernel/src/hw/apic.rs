//! The local APIC (xAPIC, through the `x2apic` crate), the TSC clock and the LAPIC timer, both
//! calibrated on PIT channel 2, and IPIs.
//!
//! Each CPU owns its `LocalApic` (the crate's handle keeps the timer configuration; the crate
//! makes it `!Send`, since the registers it drives are the calling CPU's own). It lives in a
//! per-CPU slot that only its own CPU touches, with interrupts off.

use super::idt::{ERROR_VECTOR, SPURIOUS_VECTOR, TIMER_VECTOR};
use super::{MAX_CPUS, cpu_index};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use x2apic::lapic::{LocalApic, LocalApicBuilder, TimerDivide, TimerMode};
use x86_64::instructions::interrupts::without_interrupts;
use x86_64::instructions::port::Port;

/// The xAPIC MMIO page (identity mapped, uncached).
pub const LAPIC_BASE: u64 = 0xFEE0_0000;

/// One CPU's LAPIC handle.
struct Slot(UnsafeCell<Option<LocalApic>>);
// SAFETY: slot `i` is only accessed by CPU `i` (through `cpu_index()`), with interrupts off,
// so there is never a second reference to it at the same time, and the handle never moves to
// another CPU.
unsafe impl Sync for Slot {}
static LAPICS: [Slot; MAX_CPUS] = [const { Slot(UnsafeCell::new(None)) }; MAX_CPUS];
/// LAPIC id -> CPU index + 1 (0: unknown).
static ID_TO_CPU: [AtomicU8; 256] = [const { AtomicU8::new(0) }; 256];
/// CPU index -> LAPIC id.
static CPU_TO_ID: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(0) }; MAX_CPUS];

static TSC_BASE: AtomicU64 = AtomicU64::new(0);
static TSC_HZ: AtomicU64 = AtomicU64::new(1);
/// LAPIC timer counts per second at divide-by-16.
static LAPIC_HZ: AtomicU64 = AtomicU64::new(1);

fn with_lapic<T>(f: impl FnOnce(&mut LocalApic) -> T) -> T {
    without_interrupts(|| {
        // SAFETY: this CPU's own slot, interrupts off (see `Slot`); `f` does not re-enter.
        let slot = unsafe { &mut *LAPICS[cpu_index()].0.get() };
        match slot.as_mut() {
            Some(l) => f(l),
            None => super::fatal("LAPIC used before init"),
        }
    })
}

/// The LAPIC id of the calling CPU, read from the ID register (bits 24..31 in xAPIC mode).
pub fn raw_id() -> u8 {
    // SAFETY: the ID register of the identity-mapped, uncached LAPIC page.
    (unsafe { core::ptr::read_volatile((LAPIC_BASE + 0x20) as *const u32) } >> 24) as u8
}

/// The CPU index of LAPIC id `id`, if it came up.
pub fn cpu_of_id(id: u8) -> Option<usize> {
    match ID_TO_CPU[id as usize].load(Relaxed) {
        0 => None,
        n => Some(n as usize - 1),
    }
}

/// Enables this CPU's LAPIC (timer masked off until programmed) and records its id as `cpu`.
pub fn init_local(cpu: usize) {
    let id = raw_id();
    ID_TO_CPU[id as usize].store(cpu as u8 + 1, Relaxed);
    CPU_TO_ID[cpu].store(id, Relaxed);
    let lapic = LocalApicBuilder::new()
        .timer_vector(TIMER_VECTOR as usize)
        .error_vector(ERROR_VECTOR as usize)
        .spurious_vector(SPURIOUS_VECTOR as usize)
        .timer_mode(TimerMode::OneShot)
        .timer_divide(TimerDivide::Div16)
        .timer_initial(0)
        .set_xapic_base(LAPIC_BASE)
        .build();
    let Ok(mut lapic) = lapic else {
        super::fatal("LAPIC builder refused")
    };
    // SAFETY: the LAPIC page is mapped; the vectors have IDT gates. The crate's `enable`
    // writes 0 to LINT0/LINT1, which leaves them *unmasked* (fixed, vector 0): QEMU then hands
    // the 8259's interrupts to every CPU. Mask both pins (bit 16) right after.
    unsafe {
        lapic.enable();
        core::ptr::write_volatile((LAPIC_BASE + 0x350) as *mut u32, 1 << 16);
        core::ptr::write_volatile((LAPIC_BASE + 0x360) as *mut u32, 1 << 16);
    }
    without_interrupts(|| {
        // SAFETY: CPU `cpu` is the caller (its id was just recorded), interrupts off.
        unsafe { *LAPICS[cpu].0.get() = Some(lapic) };
    });
}

/// Masks every line of both 8259 PICs (nothing here uses them; the PIT's IRQ 0 would
/// otherwise arrive as vector 8).
pub fn mask_pic() {
    // SAFETY: the PICs' data ports; a mask of 0xFF disables all their lines.
    unsafe {
        Port::<u8>::new(0x21).write(0xFF);
        Port::<u8>::new(0xA1).write(0xFF);
    }
}

/// Signals end of interrupt.
pub fn eoi() {
    // SAFETY: the EOI register of this CPU's LAPIC; a write is the whole protocol.
    unsafe { core::ptr::write_volatile((LAPIC_BASE + 0xB0) as *mut u32, 0) };
}

/// Sends `vector` to CPU `cpu`.
pub fn send_ipi(cpu: usize, vector: u8) {
    let id = CPU_TO_ID[cpu].load(Relaxed);
    // SAFETY: a fixed IPI to a CPU that is up. In xAPIC mode the destination is ICR bits
    // 56..63, which the crate's 32-bit destination field reaches as `id << 24`.
    with_lapic(|l| unsafe { l.send_ipi(vector, u32::from(id) << 24) });
}

/// INIT, then two SIPIs to `page`, to every other CPU (the MP spec's dance; delays by TSC).
pub fn start_aps(page: u8) {
    // SAFETY: the trampoline is installed at `page << 12`; the other CPUs are in reset.
    with_lapic(|l| unsafe { l.send_init_ipi_all() });
    delay_ns(10_000_000);
    for _ in 0..2 {
        // SAFETY: as above.
        with_lapic(|l| unsafe { l.send_sipi_all(page) });
        delay_ns(200_000);
    }
}

fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no side effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Monotonic nanoseconds since calibration (the TSC, which QEMU keeps in step across vCPUs).
pub fn now_ns() -> u64 {
    let d = rdtsc().saturating_sub(TSC_BASE.load(Relaxed));
    (u128::from(d) * 1_000_000_000 / u128::from(TSC_HZ.load(Relaxed))) as u64
}

/// Busy-waits `ns` nanoseconds.
pub fn delay_ns(ns: u64) {
    let end = now_ns() + ns;
    while now_ns() < end {
        core::hint::spin_loop();
    }
}

/// Measures the TSC and the LAPIC timer against 20 ms of PIT channel 2 (boot CPU, once).
pub fn calibrate() {
    const PIT_HZ: u64 = 1_193_182;
    const MS: u64 = 20;
    let latch = (PIT_HZ * MS / 1000) as u16;
    let mut gate: Port<u8> = Port::new(0x61);
    let mut cmd: Port<u8> = Port::new(0x43);
    let mut ch2: Port<u8> = Port::new(0x42);
    with_lapic(|l| {
        // SAFETY: port I/O to the PIT and the speaker gate, and this CPU's LAPIC timer, all
        // owned by the boot CPU during calibration.
        unsafe {
            let g = gate.read();
            gate.write((g & !0x02) | 0x01);
            cmd.write(0xB0);
            ch2.write(latch as u8);
            ch2.write((latch >> 8) as u8);
            l.set_timer_mode(TimerMode::OneShot);
            l.set_timer_initial(u32::MAX);
            let t0 = rdtsc();
            while gate.read() & 0x20 == 0 {
                core::hint::spin_loop();
            }
            let t1 = rdtsc();
            let counted = u64::from(u32::MAX - l.timer_current());
            l.set_timer_initial(0);
            TSC_HZ.store((t1 - t0) * 1000 / MS, Relaxed);
            LAPIC_HZ.store(counted * 1000 / MS, Relaxed);
            TSC_BASE.store(t0, Relaxed);
        }
    });
}

/// The calibrated rates: (TSC Hz, LAPIC timer Hz at divide 16).
pub fn rates() -> (u64, u64) {
    (TSC_HZ.load(Relaxed), LAPIC_HZ.load(Relaxed))
}

fn ns_to_count(ns: u64) -> u32 {
    let c = u128::from(ns) * u128::from(LAPIC_HZ.load(Relaxed)) / 1_000_000_000 + 1;
    c.min(u128::from(u32::MAX)) as u32
}

/// The LAPIC timer fires every `period_ns`.
pub fn timer_periodic(period_ns: u64) {
    let count = ns_to_count(period_ns);
    // SAFETY: this CPU's LAPIC timer.
    with_lapic(|l| unsafe {
        l.set_timer_mode(TimerMode::Periodic);
        l.set_timer_initial(count);
    });
}

/// The LAPIC timer fires once, at or after `deadline` (a [`now_ns`] time; at once if past).
pub fn timer_oneshot(deadline: u64) {
    let count = ns_to_count(deadline.saturating_sub(now_ns()));
    // SAFETY: this CPU's LAPIC timer.
    with_lapic(|l| unsafe {
        l.set_timer_mode(TimerMode::OneShot);
        l.set_timer_initial(count);
    });
}

/// Stops the LAPIC timer (an initial count of 0 disarms it).
pub fn timer_stop() {
    // SAFETY: this CPU's LAPIC timer.
    with_lapic(|l| unsafe { l.set_timer_initial(0) });
}
