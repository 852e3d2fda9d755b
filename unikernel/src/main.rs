//! Boot test (step 1).
#![no_std]
#![no_main]

pub mod hw;
mod mem;

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

const HZ: u64 = 250;
static TICKS: [AtomicU64; hw::MAX_CPUS] = [const { AtomicU64::new(0) }; hw::MAX_CPUS];
static GO: AtomicBool = AtomicBool::new(false);
static NCPUS: AtomicUsize = AtomicUsize::new(1);

/// A device interrupt on this CPU.
pub fn interrupt(vector: u8) {
    if vector == hw::idt::TIMER_VECTOR {
        TICKS[hw::cpu_index()].fetch_add(1, Relaxed);
    }
}

fn run_cpu(cpu: usize) -> ! {
    hw::apic::timer_periodic(1_000_000_000 / HZ);
    loop {
        hw::halt();
        if cpu == 0 {
            let n = NCPUS.load(Relaxed);
            if (0..n).all(|c| TICKS[c].load(Relaxed) >= 20) {
                for (c, t) in TICKS.iter().enumerate().take(n) {
                    println!("cpu {c}: {} ticks", t.load(Relaxed));
                }
                println!(
                    "boot: {} CPUs online, timer ticking on each, {} ns",
                    n,
                    hw::apic::now_ns()
                );
                hw::exit_qemu(hw::EXIT_PASS);
            }
        }
    }
}

#[unsafe(no_mangle)]
extern "C" fn kernel_main(start_info: u32) -> ! {
    hw::serial::init();
    hw::apic::mask_pic();
    let mut buf = [0u8; 256];
    let cmdline = hw::cmdline(start_info, &mut buf);
    println!("nohz unikernel: cmdline {:?}", cmdline);
    let cpus = cmdline
        .split(' ')
        .find_map(|w| w.strip_prefix("cpus="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .clamp(1, hw::MAX_CPUS);
    NCPUS.store(cpus, Relaxed);
    hw::init_cpu(0);
    hw::apic::calibrate();
    let (tsc, lapic) = hw::apic::rates();
    println!("tsc {} Hz, lapic timer {} Hz", tsc, lapic);
    if cpus > 1 && !hw::start_aps(cpus) {
        hw::fatal("APs did not come up");
    }
    GO.store(true, Relaxed);
    run_cpu(0)
}

#[unsafe(no_mangle)]
extern "C" fn ap_main(cpu: u32) -> ! {
    let cpu = cpu as usize;
    if cpu >= NCPUS.load(Relaxed) {
        loop {
            x86_64::instructions::hlt();
        }
    }
    hw::init_cpu(cpu);
    while !GO.load(Relaxed) {
        core::hint::spin_loop();
    }
    run_cpu(cpu)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hw::serial::emergency(format_args!(
        "\nPANIC on cpu {}: {}\n",
        hw::cpu_index(),
        info
    ));
    hw::exit_qemu(hw::EXIT_FAIL)
}
