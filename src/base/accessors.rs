//! `relaxed_accessors!`: the one macro that writes the getters (and setters) of the crate's
//! plain racy fields (`Rq`'s, `TickSched`'s, `IrqTime`'s), each a `Relaxed` load or store of an
//! atomic, as the kernel's plain reads and writes of those fields are.
//!
//! C source: none (the kernel reads and writes these fields directly).

/// How a field's value is kept in its atomic: the raw type and the conversions.
pub(crate) trait Relaxed: Sized {
    /// What the atomic holds.
    type Raw;
    /// The value from what the atomic holds.
    fn from_raw(raw: Self::Raw) -> Self;
    /// What the atomic holds for the value.
    fn into_raw(self) -> Self::Raw;
}

macro_rules! identity_relaxed {
    ($($t:ty),*) => {$(
        impl Relaxed for $t {
            type Raw = $t;
            #[inline(always)]
            fn from_raw(raw: $t) -> $t {
                raw
            }
            #[inline(always)]
            fn into_raw(self) -> $t {
                self
            }
        }
    )*};
}
identity_relaxed!(bool, u32, u64, usize);

impl Relaxed for crate::jiffies::Jiffies {
    type Raw = usize;
    #[inline(always)]
    fn from_raw(raw: usize) -> Self {
        crate::jiffies::Jiffies::new(raw)
    }
    #[inline(always)]
    fn into_raw(self) -> usize {
        self.get()
    }
}

/// For each entry, a getter that loads the field with `Relaxed` and converts it, and, after
/// `=>`, a setter (documented as the getter's counterpart) that converts and stores with
/// `Relaxed`:
///
/// ```text
/// relaxed_accessors! {
///     /// `rq->nr_running`.
///     pub nr_running: u32 = hot.nr_running; => pub set_nr_running;
/// }
/// ```
macro_rules! relaxed_accessors {
    () => {};
    // A getter and a setter the crate uses itself and test rigs call too (`testing_pub!`).
    (
        $(#[$gm:meta])*
        testing $get:ident: $ty:ty = $($field:ident).+; => testing $set:ident;
        $($rest:tt)*
    ) => {
        $crate::base::accessors::testing_pub! {
            $(#[$gm])*
            #[inline(always)]
            fn $get(&self) -> $ty {
                <$ty as $crate::base::accessors::Relaxed>::from_raw(
                    self.$($field).+.load($crate::sync::Ordering::Relaxed),
                )
            }
        }
        $crate::base::accessors::testing_pub! {
            #[doc = concat!("Sets [`", stringify!($get), "`](Self::", stringify!($get), ").")]
            #[inline(always)]
            fn $set(&self, value: $ty) {
                self.$($field).+.store(
                    <$ty as $crate::base::accessors::Relaxed>::into_raw(value),
                    $crate::sync::Ordering::Relaxed,
                );
            }
        }
        $crate::base::accessors::relaxed_accessors! { $($rest)* }
    };
    (
        $(#[$gm:meta])*
        $gvis:vis $get:ident: $ty:ty = $($field:ident).+; => testing $set:ident;
        $($rest:tt)*
    ) => {
        $crate::base::accessors::relaxed_accessors! {
            $(#[$gm])*
            $gvis $get: $ty = $($field).+;
        }
        $crate::base::accessors::testing_pub! {
            #[doc = concat!("Sets [`", stringify!($get), "`](Self::", stringify!($get), ").")]
            #[inline(always)]
            fn $set(&self, value: $ty) {
                self.$($field).+.store(
                    <$ty as $crate::base::accessors::Relaxed>::into_raw(value),
                    $crate::sync::Ordering::Relaxed,
                );
            }
        }
        $crate::base::accessors::relaxed_accessors! { $($rest)* }
    };
    (
        $(#[$gm:meta])*
        testing $get:ident: $ty:ty = $($field:ident).+; => $svis:vis $set:ident;
        $($rest:tt)*
    ) => {
        $crate::base::accessors::relaxed_accessors! {
            $(#[$gm])*
            testing $get: $ty = $($field).+;
        }
        #[doc = concat!("Sets [`", stringify!($get), "`](Self::", stringify!($get), ").")]
        #[inline(always)]
        $svis fn $set(&self, value: $ty) {
            self.$($field).+.store(
                <$ty as $crate::base::accessors::Relaxed>::into_raw(value),
                $crate::sync::Ordering::Relaxed,
            );
        }
        $crate::base::accessors::relaxed_accessors! { $($rest)* }
    };
    (
        $(#[$gm:meta])*
        testing $get:ident: $ty:ty = $($field:ident).+;
        $($rest:tt)*
    ) => {
        $crate::base::accessors::testing_pub! {
            $(#[$gm])*
            #[inline(always)]
            fn $get(&self) -> $ty {
                <$ty as $crate::base::accessors::Relaxed>::from_raw(
                    self.$($field).+.load($crate::sync::Ordering::Relaxed),
                )
            }
        }
        $crate::base::accessors::relaxed_accessors! { $($rest)* }
    };
    (
        $(#[$gm:meta])*
        $gvis:vis $get:ident: $ty:ty = $($field:ident).+; => $svis:vis $set:ident;
        $($rest:tt)*
    ) => {
        $crate::base::accessors::relaxed_accessors! {
            $(#[$gm])*
            $gvis $get: $ty = $($field).+;
        }
        #[doc = concat!("Sets [`", stringify!($get), "`](Self::", stringify!($get), ").")]
        #[inline(always)]
        $svis fn $set(&self, value: $ty) {
            self.$($field).+.store(
                <$ty as $crate::base::accessors::Relaxed>::into_raw(value),
                $crate::sync::Ordering::Relaxed,
            );
        }
        $crate::base::accessors::relaxed_accessors! { $($rest)* }
    };
    (
        $(#[$gm:meta])*
        $gvis:vis $get:ident: $ty:ty = $($field:ident).+;
        $($rest:tt)*
    ) => {
        $(#[$gm])*
        #[inline(always)]
        $gvis fn $get(&self) -> $ty {
            <$ty as $crate::base::accessors::Relaxed>::from_raw(
                self.$($field).+.load($crate::sync::Ordering::Relaxed),
            )
        }
        $crate::base::accessors::relaxed_accessors! { $($rest)* }
    };
}
pub(crate) use relaxed_accessors;

/// A function the crate uses itself that test rigs call too: with the `testing` feature it is
/// `pub` and hidden from the docs (not part of the embedding API), without it `pub(crate)`.
/// One definition, one doc comment.
macro_rules! testing_pub {
    ($(#[$m:meta])* fn $name:ident $($rest:tt)*) => {
        #[cfg(feature = "testing")]
        #[doc(hidden)]
        $(#[$m])*
        pub fn $name $($rest)*
        #[cfg(not(feature = "testing"))]
        #[allow(dead_code)]
        $(#[$m])*
        pub(crate) fn $name $($rest)*
    };
}
pub(crate) use testing_pub;
