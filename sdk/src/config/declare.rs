//! [`crate::plugin_config!`]: one typed struct from which a plugin's keys, types, defaults,
//! allowed values, ranges and documentation are all derived.

/// Declares a plugin's configuration as one typed struct; derives its `Default` and its
/// [`TypedConfig`](crate::config::TypedConfig) implementation (the schema the host checks
/// the user's table against, and the typed reading of the table).
///
/// Each field is `doc comment, name: type = default` and optional constraints, separated by
/// commas: `min(v)`, `max(v)`, `one_of([v, ...])`, `word()` (strings must be one word).
/// Field types are those of [`ConfigValue`](crate::config::ConfigValue); integer types bound
/// the range by themselves (`u8` is 0 to 255), [`crate::config_enum!`] enums give their
/// allowed names, and an
/// `Option` field defaulting to `None` is *unset* unless the user sets it.
///
/// ```
/// xpuprof_sdk::config_enum! {
///     /// How kernel names are printed.
///     pub enum KernelNames { Full = "full", Short = "short" }
/// }
///
/// xpuprof_sdk::plugin_config! {
///     /// The `[sink.example]` table.
///     #[derive(Debug, Clone, PartialEq)]
///     pub struct ExampleConfig {
///         /// Sampling frequency per CPU, 0 = off.
///         pub sample_hz: u64 = 99, max(10_000);
///         /// Ring buffer size in MiB.
///         pub ring_buffer_mib: u32 = 16, one_of([1, 2, 4, 8, 16, 32]);
///         /// Full or short kernel names.
///         pub kernel_names: KernelNames = KernelNames::Full;
///         /// Unset: decided from the session.
///         pub trampoline: Option<bool> = None;
///         /// Symbols to probe.
///         pub probes: Vec<String> = [];
///     }
/// }
///
/// use xpuprof_sdk::config::TypedConfig;
/// let table = "sample_hz = 49".parse().unwrap();
/// let c = ExampleConfig::from_table(&table).unwrap();
/// assert_eq!((c.sample_hz, c.trampoline), (49, None));
/// let table = "ring_buffer_mib = 3".parse().unwrap();
/// assert!(ExampleConfig::from_table(&table).is_err());
/// ```
#[macro_export]
macro_rules! plugin_config {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[doc = $doc:expr])*
                $fvis:vis $field:ident : $ty:ty = $default:expr $(, $opt:ident ( $($arg:tt)* ) )* ;
            )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $doc])* $fvis $field: $ty, )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self { $( $field: <$ty as $crate::config::FromDefault<_>>::from_default($default), )* }
            }
        }

        impl $crate::config::TypedConfig for $name {
            fn schema() -> $crate::config::ConfigSchema {
                let d = <Self as ::core::default::Default>::default();
                $crate::config::ConfigSchema::new(::std::vec![ $(
                    $crate::config::KeyBuilder::<$ty>::new(
                        ::core::stringify!($field),
                        &[$($doc),*],
                        &d.$field,
                    )
                    $( .$opt($($arg)*) )*
                    .build(),
                )* ])
            }

            fn from_table_lenient(
                table: &$crate::config::Table,
            ) -> ::core::result::Result<Self, $crate::config::KeyProblem> {
                let schema = <Self as $crate::config::TypedConfig>::schema();
                let mut c = <Self as ::core::default::Default>::default();
                $(
                    if let ::core::option::Option::Some(v) = table.get(::core::stringify!($field)) {
                        c.$field = $crate::config::read_key::<$ty>(&schema, ::core::stringify!($field), v)?;
                    }
                )*
                ::core::result::Result::Ok(c)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::config::{ConfigType, TypedConfig, Value};

    crate::config_enum! {
        /// Test enum.
        pub enum Names { Full = "full", Short = "short" }
    }

    crate::plugin_config! {
        /// Test config.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Cfg {
            /// Sampling
            /// frequency.
            pub sample_hz: u64 = 99, max(10_000);
            /// Ring buffer.
            pub ring: u32 = 16, one_of([1, 2, 4, 8, 16]);
            /// Names.
            pub names: Names = Names::Full;
            /// Unset by default.
            pub tramp: Option<bool> = None;
            /// Agent path.
            pub agent: Option<String> = None;
            /// Title.
            pub title: String = "xpuprof";
            /// Probes.
            pub probes: Vec<String> = ["a"];
            /// Gap.
            pub gap_us: f64 = 100.0, min(0.0);
            /// Depth.
            pub depth: u8 = 64, min(1);
        }
    }

    #[test]
    fn defaults_come_from_the_declaration() {
        let c = Cfg::default();
        assert_eq!(c.sample_hz, 99);
        assert_eq!(c.names, Names::Full);
        assert_eq!(c.tramp, None);
        assert_eq!(c.title, "xpuprof");
        assert_eq!(c.probes, vec!["a".to_owned()]);
        assert!(Cfg::schema().check_defaults().is_ok());
    }

    #[test]
    fn schema_has_types_ranges_allowed_values_and_docs() {
        let s = Cfg::schema();
        let k = s.key("sample_hz").unwrap();
        assert_eq!(k.doc, "Sampling frequency.");
        assert_eq!((k.min.clone(), k.max.clone()), (Some(Value::Integer(0)), Some(Value::Integer(10_000))));
        let k = s.key("depth").unwrap();
        assert_eq!(k.describe(), "an integer, between 1 and 255");
        let k = s.key("names").unwrap();
        assert_eq!(k.allowed, vec![Value::from("full"), Value::from("short")]);
        let k = s.key("tramp").unwrap();
        assert_eq!((k.ty, k.default.clone()), (ConfigType::Bool, None));
        assert_eq!(s.key("ring").unwrap().describe(), "an integer, one of 1, 2, 4, 8, 16");
    }

    #[test]
    fn reading_checks_every_value() {
        let read = |t: &str| Cfg::from_table(&t.parse().unwrap());
        let c = read("tramp = false\nnames = \"short\"\nagent = \"/x.so\"").unwrap();
        assert_eq!((c.tramp, c.names, c.agent.as_deref()), (Some(false), Names::Short, Some("/x.so")));
        let e = read("sample_hz = -5").unwrap_err();
        assert_eq!(e.to_string(), "config key `sample_hz` is -5, but must be between 0 and 10000");
        assert!(read("ring = 3").unwrap_err().problem.contains("one of 1, 2"));
        assert!(read("names = \"medium\"").unwrap_err().problem.contains("\"full\", \"short\""));
        assert!(read("depth = 0").is_err() && read("depth = 256").is_err());
        assert!(read("gap_us = -1.5").is_err());
        for v in ["nan", "+inf", "-inf"] {
            let e = read(&format!("gap_us = {v}")).unwrap_err();
            assert!(e.problem.ends_with("must be a finite number"), "{e}");
        }
        assert!(read("nope = 1").unwrap_err().problem.contains("not a key"));
        assert!(Cfg::from_table_lenient(&"nope = 1".parse().unwrap()).is_ok());
    }
}
