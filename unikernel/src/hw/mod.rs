//! The hardware layer: boot, per-CPU descriptor tables, interrupts, the LAPIC, the clock, the
//! serial console, AP bring-up and the QEMU exit device. Nothing here knows about `nohz`.

pub mod apic;
pub mod boot;
pub mod idt;
pub mod serial;

use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use x86_64::VirtAddr;
use x86_64::instructions::port::Port;
use x86_64::instructions::segmentation::{CS, DS, ES, SS, Segment};
use x86_64::instructions::tables::load_tss;
use x86_64::structures::gdt::{Descriptor, GlobalDescriptorTable, SegmentSelector};
use x86_64::structures::tss::TaskStateSegment;

/// The most CPUs this kernel brings up (stacks, TSSs and GDTs are sized by it).
pub const MAX_CPUS: usize = 8;
/// `exit_qemu` value for success (qemu exits with status 1).
pub const EXIT_PASS: u32 = 0;
/// `exit_qemu` value for failure (qemu exits with status 3).
pub const EXIT_FAIL: u32 = 1;

static TSS: [spin::Once<TaskStateSegment>; MAX_CPUS] = [const { spin::Once::new() }; MAX_CPUS];
static GDT: [spin::Once<(GlobalDescriptorTable, [SegmentSelector; 3])>; MAX_CPUS] =
    [const { spin::Once::new() }; MAX_CPUS];
/// CPUs that finished [`init_cpu`].
static ONLINE: AtomicUsize = AtomicUsize::new(0);

/// This CPU's own GDT (kernel code, data, its TSS with two IST stacks), the shared IDT, and
/// its LAPIC, as CPU `cpu`.
pub fn init_cpu(cpu: usize) {
    let tss = TSS[cpu].call_once(|| {
        let mut tss = TaskStateSegment::new();
        tss.interrupt_stack_table[idt::IST_IRQ as usize] = VirtAddr::new(boot::ist_top(cpu, 0));
        tss.interrupt_stack_table[idt::IST_EXC as usize] = VirtAddr::new(boot::ist_top(cpu, 1));
        tss
    });
    let (gdt, sel) = GDT[cpu].call_once(|| {
        let mut gdt = GlobalDescriptorTable::new();
        let code = gdt.append(Descriptor::kernel_code_segment());
        let data = gdt.append(Descriptor::kernel_data_segment());
        let tss = gdt.append(Descriptor::tss_segment(tss));
        (gdt, [code, data, tss])
    });
    gdt.load();
    // SAFETY: the selectors index the GDT just loaded, which lives in a static.
    unsafe {
        CS::set_reg(sel[0]);
        SS::set_reg(sel[1]);
        DS::set_reg(sel[1]);
        ES::set_reg(sel[1]);
        load_tss(sel[2]);
    }
    idt::load();
    apic::init_local(cpu);
    ONLINE.fetch_add(1, Relaxed);
}

/// CPUs up so far.
pub fn online() -> usize {
    ONLINE.load(Relaxed)
}

/// The calling CPU's index (its LAPIC id looked up in the table filled at bring-up).
pub fn cpu_index() -> usize {
    apic::cpu_of_id(apic::raw_id()).unwrap_or(0)
}

/// Starts every AP (they call `ap_main(index)`) and waits until `cpus` CPUs are up.
/// Returns false if they did not all come within a second.
pub fn start_aps(cpus: usize) -> bool {
    boot::install_trampoline();
    apic::start_aps((boot::TRAMPOLINE >> 12) as u8);
    let end = apic::now_ns() + 1_000_000_000;
    while online() < cpus {
        if apic::now_ns() > end {
            return false;
        }
        core::hint::spin_loop();
    }
    true
}

/// Idles until the next interrupt: entered with interrupts off, `sti; hlt` (an interrupt that
/// became pending before the `sti` is taken right after it, so a wakeup between the caller's
/// check and the halt is not lost), interrupts off again on return.
pub fn halt() {
    // SAFETY: `sti` takes effect after the next instruction, so `hlt` is reached before any
    // pending interrupt is delivered; the handler runs on an IST stack.
    unsafe { core::arch::asm!("sti", "hlt", "cli", options(nomem, nostack)) };
}

/// Runs `f` with interrupts on (a task's chunk of work), off again after.
pub fn with_interrupts<T>(f: impl FnOnce() -> T) -> T {
    x86_64::instructions::interrupts::enable();
    let r = f();
    x86_64::instructions::interrupts::disable();
    r
}

/// Exits QEMU through isa-debug-exit: status `(code << 1) | 1`.
pub fn exit_qemu(code: u32) -> ! {
    let mut port: Port<u32> = Port::new(0xF4);
    // SAFETY: the isa-debug-exit device at 0xF4; writing to it ends the VM.
    unsafe { port.write(code) };
    loop {
        x86_64::instructions::interrupts::disable();
        x86_64::instructions::hlt();
    }
}

/// Prints `msg` and exits with failure.
pub fn fatal(msg: &str) -> ! {
    serial::emergency(format_args!("\nFATAL on cpu {}: {}\n", cpu_index(), msg));
    exit_qemu(EXIT_FAIL)
}

/// The boot command line (`-append`), from `hvm_start_info.cmdline_paddr`, copied into `buf`.
pub fn cmdline(start_info: u32, buf: &mut [u8]) -> &str {
    const MAGIC: u32 = 0x336e_c578;
    let si = start_info as usize as *const u32;
    // SAFETY: the PVH loader passed the physical address of hvm_start_info, identity mapped;
    // its magic is checked before the command line's address (offset 24) is used, and the
    // string is read only up to its NUL or `buf`'s length.
    let len = unsafe {
        if si.is_null() || core::ptr::read_volatile(si) != MAGIC {
            return "";
        }
        let p = core::ptr::read_volatile((start_info as usize + 24) as *const u64) as *const u8;
        let mut n = 0;
        while !p.is_null() && n < buf.len() {
            let b = core::ptr::read_volatile(p.add(n));
            if b == 0 {
                break;
            }
            buf[n] = b;
            n += 1;
        }
        n
    };
    core::str::from_utf8(&buf[..len]).unwrap_or("")
}
