//! A backend's settings declared once for both ends (feature `agent-stream`): the host plugin's
//! `[source.NAME]` keys and the options its in-target agent reads from `XPUPROF_<NAME>_OPTS`.
//!
//! [`crate::backend_options!`] declares one struct whose fields are host keys, agent options or
//! both; [`crate::option_enum!`] declares an enum that can be either. The agent's side of them
//! (the option items and their words) is `xpuprof_wire::opts`; this module adds the host's side
//! (the [`ConfigValue`](crate::config::ConfigValue) of those enums), which is why it lives in the
//! SDK: the wire crate depends on nothing.

use crate::wire::opts::{PythonMode, StackMode};

/// Implements [`ConfigValue`](crate::config::ConfigValue) for an enum declared with
/// `xpuprof_wire::opt_enum!`: a string key whose allowed values are the enum's words, in the
/// order declared.
#[doc(hidden)]
#[macro_export]
macro_rules! __opt_enum_config_value {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::config::ConfigValue for $t {
            type Item = Self;
            const TYPE: $crate::config::ConfigType = $crate::config::ConfigType::String;
            fn from_toml(v: &$crate::config::Value) -> ::core::option::Option<Self> {
                v.as_str().and_then(Self::from_word)
            }
            fn to_toml(&self) -> ::core::option::Option<$crate::config::Value> {
                ::core::option::Option::Some(Self::item_to_toml(self))
            }
            fn item_to_toml(item: &Self) -> $crate::config::Value {
                $crate::config::Value::String(item.as_str().into())
            }
            fn allowed() -> ::std::vec::Vec<$crate::config::Value> {
                Self::ALL.iter().map(|v| $crate::config::Value::String(v.as_str().into())).collect()
            }
        }
    )*};
}

crate::__opt_enum_config_value!(StackMode, PythonMode);

/// Declares an enum that is both a host config value and an agent option: its variants and the
/// word of each (`Variant = "word"`), with `as_str`, `from_word` and `ALL`. The host reads it
/// from the user's table (a word not declared is an error listing the words), the agent from
/// its options string (the same words).
///
/// ```
/// xpuprof_sdk::option_enum! {
///     /// Which library to trace with.
///     pub enum Library { Auto = "auto", Old = "old" }
/// }
/// use xpuprof_sdk::config::ConfigValue;
/// assert_eq!(Library::from_toml(&"old".into()), Some(Library::Old));
/// use xpuprof_sdk::wire::opts::{Opt, OptValue};
/// assert_eq!(Library::read(&Opt { key: "library", value: "auto" }), Ok(Library::Auto));
/// ```
#[macro_export]
macro_rules! option_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $crate::wire::opt_enum! {
            $(#[$meta])*
            $vis enum $name { $( $(#[$vmeta])* $variant = $text ),+ }
        }
        $crate::__opt_enum_config_value!($name);
    };
}

/// Declares a backend's settings once: one struct whose fields are its host plugin's config
/// keys (`#[host]`), its agent's options (`#[agent]`) or both (`#[both]`). The host reads the
/// struct from its table (the struct's [`TypedConfig`](crate::config::TypedConfig): the
/// `#[host]` and `#[both]` fields are the keys, declared as in [`crate::plugin_config!`], with
/// their constraints) and writes it into the agent's environment (`to_opts`: the `#[both]` and
/// `#[agent]` fields, in the order declared); the agent reads it back (`apply`, also as its
/// `xpuprof_wire::opts::AgentOptions`). An `#[agent]` field is not a key: the host sets it
/// from the session (a capture window) or a measurement sets it in the environment.
///
/// ```
/// xpuprof_sdk::option_enum! {
///     /// Which library to trace with.
///     pub enum Library { Auto = "auto", Old = "old" }
/// }
/// xpuprof_sdk::backend_options! {
///     /// The `[source.my-gpu]` table and the agent's options.
///     #[derive(Debug, Clone, PartialEq)]
///     pub struct Settings {
///         #[host]
///         /// path of the agent library
///         pub agent: Option<String> = None;
///         #[both]
///         /// kernel records
///         pub kernels: bool = true;
///         #[both]
///         /// tracing library
///         pub library: Library = Library::Auto;
///         #[both]
///         /// buffer size, KiB
///         pub buffer_kib: u32 = 64, min(4);
///         #[agent]
///         /// start with no window open
///         pub paused: bool = false;
///     }
/// }
/// use xpuprof_sdk::config::TypedConfig;
/// let host = Settings::from_table(&"library = \"old\"".parse().unwrap()).unwrap();
/// assert_eq!(host.to_opts(), "kernels=1,library=old,buffer_kib=64,paused=0");
/// assert!(Settings::from_table(&"paused = true".parse().unwrap()).is_err());
/// let mut agent = Settings::default();
/// for o in xpuprof_sdk::wire::opts::parse(&host.to_opts()).unwrap() {
///     assert!(agent.apply(&o).unwrap());
/// }
/// assert_eq!(agent, host);
/// ```
#[macro_export]
macro_rules! backend_options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                #[$role:ident]
                $(#[doc = $doc:expr])*
                pub $field:ident : $ty:ty = $default:expr $(, $opt:ident ( $($arg:tt)* ) )* ;
            )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self { $( $field: $crate::__backend_default!($role, $ty, $default), )* }
            }
        }

        impl $crate::config::TypedConfig for $name {
            fn schema() -> $crate::config::ConfigSchema {
                let d = <Self as ::core::default::Default>::default();
                let mut keys = ::std::vec::Vec::new();
                $( $crate::__backend_key!($role {
                    keys.push(
                        $crate::config::KeyBuilder::<$ty>::new(
                            ::core::stringify!($field),
                            &[$($doc),*],
                            &d.$field,
                        )
                        $( .$opt($($arg)*) )*
                        .build(),
                    );
                }); )*
                $crate::config::ConfigSchema::new(keys)
            }

            fn from_table_lenient(
                table: &$crate::config::Table,
            ) -> ::core::result::Result<Self, $crate::config::KeyProblem> {
                let schema = <Self as $crate::config::TypedConfig>::schema();
                let mut c = <Self as ::core::default::Default>::default();
                $( $crate::__backend_key!($role {
                    if let ::core::option::Option::Some(v) = table.get(::core::stringify!($field)) {
                        c.$field = $crate::config::read_key::<$ty>(&schema, ::core::stringify!($field), v)?;
                    }
                }); )*
                ::core::result::Result::Ok(c)
            }
        }

        impl $name {
            /// The agent's options as the host writes them: `key=value,...`.
            pub fn to_opts(&self) -> ::std::string::String {
                let mut items: ::std::vec::Vec<::std::string::String> = ::std::vec::Vec::new();
                $( $crate::__backend_opt!($role {
                    items.push(::std::format!(
                        "{}={}",
                        ::core::stringify!($field),
                        $crate::wire::opts::OptValue::write(&self.$field)
                    ));
                }); )*
                items.join(",")
            }

            /// Applies item `o` when its key is one of the agent's options; `Ok(false)` for any
            /// other key, an error naming a bad value.
            pub fn apply(
                &mut self,
                o: &$crate::wire::opts::Opt<'_>,
            ) -> ::core::result::Result<bool, ::std::string::String> {
                $( $crate::__backend_opt!($role {
                    if o.key == ::core::stringify!($field) {
                        self.$field = $crate::wire::opts::OptValue::read(o)?;
                        return ::core::result::Result::Ok(true);
                    }
                }); )*
                ::core::result::Result::Ok(false)
            }
        }

        impl $crate::wire::opts::AgentOptions for $name {
            fn to_opts(&self) -> ::std::string::String {
                $name::to_opts(self)
            }
            fn apply(
                &mut self,
                o: &$crate::wire::opts::Opt<'_>,
            ) -> ::core::result::Result<bool, ::std::string::String> {
                $name::apply(self, o)
            }
        }
    };
}

/// The block when the field's role makes it a host key.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_key {
    (host $b:block) => {
        $b
    };
    (both $b:block) => {
        $b
    };
    (agent $b:block) => {};
}

/// The block when the field's role makes it an agent option.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_opt {
    (host $b:block) => {};
    (both $b:block) => {
        $b
    };
    (agent $b:block) => {
        $b
    };
}

/// A field's default: written as for [`crate::plugin_config!`] when it is a key, as the value
/// itself when it is only an agent option.
#[doc(hidden)]
#[macro_export]
macro_rules! __backend_default {
    (host, $ty:ty, $default:expr) => {
        <$ty as $crate::config::FromDefault<_>>::from_default($default)
    };
    (both, $ty:ty, $default:expr) => {
        <$ty as $crate::config::FromDefault<_>>::from_default($default)
    };
    (agent, $ty:ty, $default:expr) => {
        $default
    };
}

#[cfg(test)]
mod tests {
    use crate::config::{ConfigValue, TypedConfig, Value};
    use crate::wire::opts::{parse, Opt, OptValue, StackMode};

    crate::option_enum! {
        /// Test enum.
        pub enum Lib { Auto = "auto", Old = "old" }
    }

    crate::backend_options! {
        /// Test settings.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Settings {
            #[host]
            /// Agent path.
            pub agent: Option<String> = None;
            #[host]
            /// Stacks.
            pub launch_stacks: StackMode = StackMode::Agent;
            #[both]
            /// Library.
            pub lib: Lib = Lib::Auto;
            #[agent]
            /// Paused.
            pub paused: bool = false;
            #[both]
            /// Period.
            pub period: u32 = 0, max(31);
            #[host]
            /// Frames.
            pub frames: Vec<String> = ["a:*"];
        }
    }

    #[test]
    fn keys_are_the_host_fields_options_the_agent_fields() {
        let keys: Vec<String> = Settings::schema().into_keys().into_iter().map(|k| k.name).collect();
        assert_eq!(keys, ["agent", "launch_stacks", "lib", "period", "frames"]);
        assert_eq!(Settings::default().to_opts(), "lib=auto,paused=0,period=0");
        let read = |t: &str| Settings::from_table(&t.parse().unwrap());
        assert!(read("paused = true").unwrap_err().problem.contains("not a key"));
        let e = read("period = 32").unwrap_err().to_string();
        assert_eq!(e, "config key `period` is 32, but must be between 0 and 31");
        assert!(read("lib = \"new\"").unwrap_err().problem.contains("\"auto\", \"old\""));
        let host = Settings { lib: Lib::Old, paused: true, period: 7, ..read("agent = \"/a.so\"").unwrap() };
        let mut agent = Settings::default();
        for o in parse(&format!("{},agent=/b.so", host.to_opts())).unwrap() {
            assert_eq!(agent.apply(&o), Ok(o.key != "agent"), "{}", o.key);
        }
        assert_eq!(Settings { agent: Some("/a.so".into()), ..agent }, host);
        assert!(Lib::read(&Opt { key: "lib", value: "x" }).unwrap_err().contains("must be auto, old"));
    }

    #[test]
    fn the_agents_enums_are_config_values() {
        let words: Vec<Value> = ["agent", "ebpf", "both", "off"].map(Value::from).into();
        assert_eq!(StackMode::allowed(), words);
        assert_eq!(StackMode::from_toml(&"both".into()), Some(StackMode::Both));
        assert_eq!(StackMode::from_toml(&"x".into()), None);
    }
}
