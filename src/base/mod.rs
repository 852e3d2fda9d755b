//! The primitives every room builds on, none of them a kernel path: CPU ids and per-CPU data
//! ([`cpu`]), the cpumask ([`cpumask`]), jiffies ([`jiffies`]), static keys
//! ([`static_key`]), counted warnings ([`warn`]) and the one source of atomics, fences and
//! named ordering sites ([`sync`]). They import nothing from the rooms above them.

pub(crate) mod accessors;
pub mod cpu;
pub mod cpumask;
pub mod cpus;
pub mod jiffies;
pub mod static_key;
pub mod sync;
pub mod warn;
