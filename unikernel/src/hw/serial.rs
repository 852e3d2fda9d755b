//! The serial console: COM1 through the `uart_16550` crate, behind a spin lock taken with
//! interrupts off (so a handler on the same CPU can never wait for its own lock).

use core::fmt::Write;
use spin::Mutex;
use uart_16550::SerialPort;

// SAFETY: 0x3F8 is COM1 on the PC platform QEMU emulates; nothing else drives it.
static COM1: Mutex<SerialPort> = Mutex::new(unsafe { SerialPort::new(0x3F8) });

/// Programs the UART (115200 8N1, FIFOs on).
pub fn init() {
    COM1.lock().init();
}

/// Writes `args` under the lock, interrupts off.
pub fn print(args: core::fmt::Arguments) {
    x86_64::instructions::interrupts::without_interrupts(|| {
        let _ = COM1.lock().write_fmt(args);
    });
}

/// Writes `args` even if the lock is held (a fatal exception, a panic): the output may
/// interleave, which beats losing it.
pub fn emergency(args: core::fmt::Arguments) {
    if let Some(mut port) = COM1.try_lock() {
        let _ = port.write_fmt(args);
        return;
    }
    // SAFETY: the machine is about to exit; a second writer racing this one only garbles text.
    let mut port = unsafe { SerialPort::new(0x3F8) };
    let _ = port.write_fmt(args);
}

/// `print!` to the serial console.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::hw::serial::print(format_args!($($arg)*)) };
}

/// `println!` to the serial console.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::hw::serial::print(format_args!("{}\n", format_args!($($arg)*))) };
}
