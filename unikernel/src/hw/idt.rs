//! The IDT and the interrupt entry stubs.
//!
//! Every gate is an interrupt gate (IF cleared on entry) running on an IST stack, because the
//! precompiled `core` uses the red zone: nothing may be pushed below an interrupted RSP. Each
//! stub pushes an error code (0 where the CPU pushes none) and its vector, saves every general
//! register and the SSE state (`fxsave` into a 16-byte aligned area), and calls
//! [`isr_dispatch`] with a pointer to the saved frame.

use super::apic;
use x86_64::VirtAddr;
use x86_64::structures::idt::InterruptDescriptorTable;

/// The LAPIC timer (the sched tick).
pub const TIMER_VECTOR: u8 = 0x30;
/// The nohz kick IPI.
pub const KICK_VECTOR: u8 = 0x31;
/// The reschedule IPI (a wakeup; its handler does nothing but end the `hlt`).
pub const RESCHED_VECTOR: u8 = 0x32;
/// LAPIC errors.
pub const ERROR_VECTOR: u8 = 0x33;
/// LAPIC spurious interrupts (no EOI).
pub const SPURIOUS_VECTOR: u8 = 0xFF;

/// IST index (1-based in the TSS, 0-based here) of the interrupt stack.
pub const IST_IRQ: u16 = 0;
/// IST index of the exception stack (an exception inside a handler must not clobber it).
pub const IST_EXC: u16 = 1;

macro_rules! stubs {
    ($($kind:ident $n:literal),* $(,)?) => {
        core::arch::global_asm!(
            concat!(
                ".section .text.isr, \"ax\"\n",
                $( stubs!(@$kind $n), )*
                "isr_common:\n",
                "push %rax\npush %rbx\npush %rcx\npush %rdx\npush %rsi\npush %rdi\npush %rbp\n",
                "push %r8\npush %r9\npush %r10\npush %r11\npush %r12\npush %r13\npush %r14\npush %r15\n",
                "mov %rsp, %rbx\n",
                "sub $512, %rsp\n",
                "and $-16, %rsp\n",
                "fxsave (%rsp)\n",
                "mov %rbx, %rdi\n",
                "cld\n",
                "call isr_dispatch\n",
                "fxrstor (%rsp)\n",
                "mov %rbx, %rsp\n",
                "pop %r15\npop %r14\npop %r13\npop %r12\npop %r11\npop %r10\npop %r9\npop %r8\n",
                "pop %rbp\npop %rdi\npop %rsi\npop %rdx\npop %rcx\npop %rbx\npop %rax\n",
                "add $16, %rsp\n",
                "iretq\n",
                ".section .rodata.isr, \"a\"\n",
                ".balign 8\n",
                ".global isr_table\n",
                "isr_table:\n",
                $( concat!(".quad ", stringify!($n), "\n.quad isr_", stringify!($n), "\n"), )*
                ".global isr_table_end\n",
                "isr_table_end:\n",
                ".text\n",
            ),
            options(att_syntax)
        );
    };
    (@noerr $n:literal) => {
        concat!("isr_", stringify!($n), ":\npush $0\npush $", stringify!($n), "\njmp isr_common\n")
    };
    (@err $n:literal) => {
        concat!("isr_", stringify!($n), ":\npush $", stringify!($n), "\njmp isr_common\n")
    };
}

stubs!(
    noerr 0, noerr 1, noerr 2, noerr 3, noerr 4, noerr 5, noerr 6, noerr 7, err 8, noerr 9,
    err 10, err 11, err 12, err 13, err 14, noerr 15, noerr 16, err 17, noerr 18, noerr 19,
    noerr 20, err 21, noerr 22, noerr 23, noerr 24, noerr 25, noerr 26, noerr 27, noerr 28,
    err 29, err 30, noerr 31, noerr 48, noerr 49, noerr 50, noerr 51, noerr 255,
);

unsafe extern "C" {
    static isr_table: [u64; 2];
    static isr_table_end: u64;
}

/// What a stub saved, lowest address first.
#[repr(C)]
#[derive(Debug)]
pub struct Frame {
    /// r15 .. rax, in push order reversed.
    pub regs: [u64; 15],
    /// The vector.
    pub vector: u64,
    /// The CPU's error code, or 0.
    pub error: u64,
    /// The interrupted instruction.
    pub rip: u64,
    /// Its code segment.
    pub cs: u64,
    /// Its flags.
    pub rflags: u64,
    /// Its stack.
    pub rsp: u64,
    /// Its stack segment.
    pub ss: u64,
}

static IDT: spin::Once<InterruptDescriptorTable> = spin::Once::new();

fn build() -> InterruptDescriptorTable {
    let mut idt = InterruptDescriptorTable::new();
    // SAFETY: the table's bounds are its two symbols, in the image; its rows are
    // (vector, stub address) pairs written by the stubs! macro.
    let rows = unsafe {
        let start = core::ptr::addr_of!(isr_table);
        let end = core::ptr::addr_of!(isr_table_end) as *const [u64; 2];
        core::slice::from_raw_parts(start, end.offset_from(start) as usize)
    };
    for &[vector, addr] in rows {
        let addr = VirtAddr::new(addr);
        let ist = if vector < 32 { IST_EXC } else { IST_IRQ };
        // SAFETY: each address is a stub above, which saves every register and returns with
        // iretq (or never returns, for exceptions), on an IST stack set in every CPU's TSS.
        unsafe {
            let opts = match vector {
                8 => idt.double_fault.set_handler_addr(addr),
                14 => idt.page_fault.set_handler_addr(addr),
                13 => idt.general_protection_fault.set_handler_addr(addr),
                v if v < 32 => match set_exception(&mut idt, v as u8, addr) {
                    Some(opts) => opts,
                    None => continue,
                },
                v => idt[v as u8].set_handler_addr(addr),
            };
            opts.set_stack_index(ist);
        }
    }
    idt
}

/// The entries the x86_64 crate types by kind, other than #DF, #PF and #GP.
///
/// # Safety
/// `addr` must be a stub of this module for `v`.
unsafe fn set_exception(
    idt: &mut InterruptDescriptorTable,
    v: u8,
    addr: VirtAddr,
) -> Option<&mut x86_64::structures::idt::EntryOptions> {
    // SAFETY: forwarded from the caller.
    Some(unsafe {
        match v {
            0 => idt.divide_error.set_handler_addr(addr),
            1 => idt.debug.set_handler_addr(addr),
            2 => idt.non_maskable_interrupt.set_handler_addr(addr),
            3 => idt.breakpoint.set_handler_addr(addr),
            4 => idt.overflow.set_handler_addr(addr),
            5 => idt.bound_range_exceeded.set_handler_addr(addr),
            6 => idt.invalid_opcode.set_handler_addr(addr),
            7 => idt.device_not_available.set_handler_addr(addr),
            10 => idt.invalid_tss.set_handler_addr(addr),
            11 => idt.segment_not_present.set_handler_addr(addr),
            12 => idt.stack_segment_fault.set_handler_addr(addr),
            16 => idt.x87_floating_point.set_handler_addr(addr),
            17 => idt.alignment_check.set_handler_addr(addr),
            18 => idt.machine_check.set_handler_addr(addr),
            19 => idt.simd_floating_point.set_handler_addr(addr),
            20 => idt.virtualization.set_handler_addr(addr),
            21 => idt.cp_protection_exception.set_handler_addr(addr),
            28 => idt.hv_injection_exception.set_handler_addr(addr),
            29 => idt.vmm_communication_exception.set_handler_addr(addr),
            30 => idt.security_exception.set_handler_addr(addr),
            // 9, 15, 22-27, 31: reserved, left absent.
            _ => return None,
        }
    })
}

/// Loads the (shared) IDT on this CPU.
pub fn load() {
    IDT.call_once(build).load();
}

/// The stubs' common Rust entry: exceptions are fatal; device vectors go to the kernel.
#[unsafe(no_mangle)]
extern "C" fn isr_dispatch(frame: &mut Frame) {
    let vector = frame.vector as u8;
    match vector {
        0..=31 => {
            crate::hw::serial::emergency(format_args!(
                "\nEXCEPTION {} err={:#x} rip={:#x} rsp={:#x} cr2={:#x} cpu={}\n",
                vector,
                frame.error,
                frame.rip,
                frame.rsp,
                x86_64::registers::control::Cr2::read_raw(),
                super::cpu_index(),
            ));
            super::exit_qemu(super::EXIT_FAIL)
        }
        SPURIOUS_VECTOR => {}
        ERROR_VECTOR => apic::eoi(),
        v => {
            crate::interrupt(v);
            apic::eoi();
        }
    }
}
