//! kernel/sched/core.c's pieces the NOHZ code needs: CPU hotplug's scheduler part.

pub mod hotplug;

pub use hotplug::HotplugError;
