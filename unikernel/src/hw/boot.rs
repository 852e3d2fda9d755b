//! PVH entry, the switch to long mode, the AP trampoline, and the boot stacks.
//!
//! QEMU's PVH loader enters [`pvh_start32`] in 32-bit protected mode with paging off and `ebx`
//! holding the physical address of `hvm_start_info`. The entry zeroes `.bss`, builds the boot
//! page tables (4 GiB identity mapped with 2 MiB pages, the LAPIC page uncached), enables PAE,
//! long mode, paging and SSE, and calls `kernel_main(start_info)` on CPU 0's stack. An AP
//! starts in real mode at [`TRAMPOLINE`] (a copy of `ap_tramp_start..ap_tramp_end`), goes to
//! protected mode, joins the same path, takes the next CPU index with `lock xadd` and calls
//! `ap_main(index)` on that index's stack.

/// Bytes of each CPU's kernel stack.
pub const STACK_SIZE: usize = 64 * 1024;
/// Bytes of each IST stack (two per CPU: interrupts, exceptions).
pub const IST_SIZE: usize = 32 * 1024;
/// Physical address the AP trampoline is copied to (SIPI vector `TRAMPOLINE >> 12`).
pub const TRAMPOLINE: usize = 0x8000;

core::arch::global_asm!(
    r#"
    .section .note.Xen, "a", @note
    .balign 4
    .long 4
    .long 4
    .long 18
    .asciz "Xen"
    .long pvh_start32

    .section .boot32, "ax"
    .code32
    .global pvh_start32
pvh_start32:
    cli
    cld
    mov %ebx, %esi
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    xor %eax, %eax
    rep stosb
    mov %esi, pvh_start_info
    xor %ebp, %ebp
    /* PML4[0] -> PDPT, PDPT[0..4] -> 4 PDs of 2 MiB pages: 4 GiB identity mapped. */
    mov $boot_pdpt, %eax
    or $0x3, %eax
    mov %eax, boot_pml4
    mov $boot_pd, %eax
    or $0x3, %eax
    mov $boot_pdpt, %edi
    mov $4, %ecx
1:  mov %eax, (%edi)
    add $0x1000, %eax
    add $8, %edi
    loop 1b
    mov $boot_pd, %edi
    mov $0x83, %eax
    mov $2048, %ecx
2:  mov %eax, (%edi)
    movl $0, 4(%edi)
    add $0x200000, %eax
    add $8, %edi
    loop 2b
    /* The LAPIC page (0xFEE00000, entry 2039): uncached. */
    orl $0x18, boot_pd + 2039 * 8

    .global long_mode_common32
long_mode_common32:
    lgdt boot_gdtr
    mov %cr4, %eax
    or $0x20, %eax
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $0x100, %eax
    wrmsr
    mov %cr0, %eax
    or $0x80000001, %eax
    mov %eax, %cr0
    ljmp $0x18, $long_entry64

    .code64
long_entry64:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %ax, %fs
    mov %ax, %gs
    /* SSE: CR0.EM off, CR0.MP on; CR4.OSFXSR | CR4.OSXMMEXCPT. */
    mov %cr0, %rax
    and $~0x4, %rax
    or $0x2, %rax
    mov %rax, %cr0
    mov %cr4, %rax
    or $0x600, %rax
    mov %rax, %cr4
    test %ebp, %ebp
    jnz 3f
    lea cpu_stacks + {stack}(%rip), %rsp
    mov pvh_start_info(%rip), %edi
    call kernel_main
4:  cli
    hlt
    jmp 4b
3:  mov $1, %eax
    lock xadd %eax, ap_next_index(%rip)
    cmp ${max}, %eax
    jae 4b
    mov %eax, %edi
    lea 1(%rax), %rcx
    imul ${stack}, %rcx
    lea cpu_stacks(%rip), %rsp
    add %rcx, %rsp
    call ap_main
    jmp 4b

    /* The AP trampoline: copied to {tramp}, entered in real mode by the SIPI. */
    .code16
    .global ap_tramp_start
ap_tramp_start:
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    lgdtl {tramp} + (tramp_gdtr - ap_tramp_start)
    mov %cr0, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x08, ${tramp} + (tramp32 - ap_tramp_start)
    .code32
tramp32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov $1, %ebp
    mov $long_mode_common32, %eax
    jmp *%eax
    .balign 8
tramp_gdtr:
    .word boot_gdt_end - boot_gdt - 1
    .long boot_gdt
    .global ap_tramp_end
ap_tramp_end:
    .code64

    .section .data.boot, "aw"
    .balign 8
boot_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff
    .quad 0x00cf92000000ffff
    .quad 0x00af9a000000ffff
boot_gdt_end:
    .balign 8
boot_gdtr:
    .word boot_gdt_end - boot_gdt - 1
    .long boot_gdt
    .balign 4
    .global ap_next_index
ap_next_index:
    .long 1

    .section .bss.boot, "aw", @nobits
    .balign 4096
boot_pml4: .skip 4096
boot_pdpt: .skip 4096
boot_pd:   .skip 4 * 4096
    .global cpu_stacks
cpu_stacks: .skip {stack} * {max}
    .global ist_stacks
ist_stacks: .skip {ist} * 2 * {max}
    .balign 8
    .global pvh_start_info
pvh_start_info: .skip 8
    .text
"#,
    stack = const STACK_SIZE,
    ist = const IST_SIZE,
    max = const super::MAX_CPUS,
    tramp = const TRAMPOLINE,
    options(att_syntax)
);

unsafe extern "C" {
    static ap_tramp_start: u8;
    static ap_tramp_end: u8;
    static ist_stacks: u8;
}

/// The top of CPU `cpu`'s IST stack `which` (0: interrupts, 1: exceptions), 16-byte aligned.
pub fn ist_top(cpu: usize, which: usize) -> u64 {
    // Only the symbol's address is taken; the stacks are written by the CPU alone.
    let base = core::ptr::addr_of!(ist_stacks) as u64;
    base + ((cpu * 2 + which + 1) * IST_SIZE) as u64
}

/// Copies the AP trampoline to [`TRAMPOLINE`] (conventional memory, identity mapped, unused by
/// the PVH loader: `hvm_start_info` and the command line were read before).
pub fn install_trampoline() {
    // SAFETY: the symbols delimit the trampoline's bytes in the image; the destination is
    // RAM below 1 MiB that nothing else uses, and the copy does not overlap the image.
    unsafe {
        let start = core::ptr::addr_of!(ap_tramp_start);
        let len = core::ptr::addr_of!(ap_tramp_end) as usize - start as usize;
        core::ptr::copy_nonoverlapping(start, TRAMPOLINE as *mut u8, len);
    }
}
