//! The agents' option strings (`XPUPROF_<BACKEND>_OPTS`): comma-separated `key=value` items that
//! carry the host plugin's settings into the target, where nothing but the environment reaches
//! the agent. A backend declares its agent's options once, with
//! [`agent_options!`](crate::agent_options): one struct that the host fills from its typed config
//! and writes (`to_opts`), and that the agent reads back item by item (`apply`). Both ends use
//! this crate, so they agree on every key and word; parsing is here so every agent says the same
//! about a bad item.
//!
//! ```
//! xpuprof_wire::opt_enum! {
//!     /// Which library to trace with.
//!     pub enum Library { Auto = "auto", Old = "old" }
//! }
//! xpuprof_wire::agent_options! {
//!     /// The options of an agent.
//!     #[derive(Debug, PartialEq)]
//!     pub struct Opts {
//!         /// Kernel records.
//!         pub kernels: bool = true;
//!         /// Tracing library.
//!         pub library: Library = Library::Auto;
//!     }
//! }
//! let host = Opts { kernels: false, library: Library::Old };
//! assert_eq!(host.to_opts(), "kernels=0,library=old");
//! let mut agent = Opts::default();
//! for o in xpuprof_wire::opts::parse(&host.to_opts()).unwrap() {
//!     assert!(agent.apply(&o).unwrap());
//! }
//! assert_eq!(agent, host);
//! ```

/// One `key=value` item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt<'a> {
    /// The key.
    pub key: &'a str,
    /// The value, as written.
    pub value: &'a str,
}

impl Opt<'_> {
    /// A boolean written `1`/`true` or `0`/`false`.
    pub fn flag(&self) -> Result<bool, String> {
        match self.value {
            "1" | "true" => Ok(true),
            "0" | "false" => Ok(false),
            v => Err(format!("option `{}` must be 0 or 1, got `{v}`", self.key)),
        }
    }

    /// A number.
    pub fn number<T: std::str::FromStr>(&self) -> Result<T, String> {
        self.value.parse().map_err(|_| format!("option {}: bad number `{}`", self.key, self.value))
    }

    /// One of `allowed` (returned as the matching index).
    pub fn one_of(&self, allowed: &[&str]) -> Result<usize, String> {
        allowed.iter().position(|a| *a == self.value).ok_or_else(|| {
            format!("option {} must be {}, got `{}`", self.key, allowed.join(", "), self.value)
        })
    }

    /// The error for a key the agent does not know.
    pub fn unknown(&self) -> String {
        format!("unknown option `{}`", self.key)
    }

    /// A [`StackMode`] written `agent`, `ebpf`, `both` or `off`.
    pub fn stack_mode(&self) -> Result<StackMode, String> {
        StackMode::read(self)
    }
}

/// The items of `opts`, in order; an item without `=` is an error naming it.
pub fn parse(opts: &str) -> Result<Vec<Opt<'_>>, String> {
    opts.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (key, value) =
                item.split_once('=').ok_or_else(|| format!("option `{item}` is not key=value"))?;
            Ok(Opt { key, value })
        })
        .collect()
}

/// A backend's agent options ([`agent_options!`](crate::agent_options) implements it): their
/// defaults, how the host writes them and how the agent reads one item.
pub trait AgentOptions: Default {
    /// The options as the host writes them: `key=value,...`.
    fn to_opts(&self) -> String;
    /// Applies item `o` when its key is one of these options; `Ok(false)` for any other key.
    fn apply(&mut self, o: &Opt<'_>) -> Result<bool, String>;
}

/// A type an option can have: how the host writes it and the agent reads it back.
pub trait OptValue: Sized {
    /// The value as written in the options string.
    fn write(&self) -> String;
    /// The value of item `o`, or why it is not one.
    fn read(o: &Opt<'_>) -> Result<Self, String>;
}

impl OptValue for bool {
    fn write(&self) -> String {
        u8::from(*self).to_string()
    }
    fn read(o: &Opt<'_>) -> Result<Self, String> {
        o.flag()
    }
}

macro_rules! number_opts {
    ($($t:ty),*) => {$(
        impl OptValue for $t {
            fn write(&self) -> String {
                self.to_string()
            }
            fn read(o: &Opt<'_>) -> Result<Self, String> {
                o.number()
            }
        }
    )*};
}
number_opts!(u8, u16, u32, u64, usize);

/// An option that may be unset: written empty (`key=`) when `None`, and an empty value reads as
/// `None`.
impl<T: OptValue> OptValue for Option<T> {
    fn write(&self) -> String {
        self.as_ref().map(T::write).unwrap_or_default()
    }
    fn read(o: &Opt<'_>) -> Result<Self, String> {
        if o.value.is_empty() {
            Ok(None)
        } else {
            T::read(o).map(Some)
        }
    }
}

/// Declares an enum option: its variants and the word of each (`Variant = "word"`), with
/// `as_str`, `from_word`, `ALL` and its [`OptValue`] (an unknown word is an error listing the words).
#[macro_export]
macro_rules! opt_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in the order declared.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word of this value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            /// The value written `word` (the host's config enums use the same words).
            pub fn from_word(word: &str) -> ::core::option::Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == word)
            }
        }

        impl $crate::opts::OptValue for $name {
            fn write(&self) -> ::std::string::String {
                ::std::string::String::from(self.as_str())
            }
            fn read(o: &$crate::opts::Opt<'_>) -> ::core::result::Result<Self, ::std::string::String> {
                ::core::result::Result::Ok(Self::ALL[o.one_of(&[$($text),+])?])
            }
        }
    };
}

/// Declares an agent's options once: a struct of `pub field: Type = default;` items (each type an
/// [`OptValue`]) with its `Default`, `to_opts` (the host writes `key=value,...`, every field, in
/// the order declared) and `apply` (the agent reads an item; `Ok(false)` for a key that is not
/// one of these options), also as its [`AgentOptions`].
#[macro_export]
macro_rules! agent_options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[doc = $doc:expr])* pub $field:ident : $ty:ty = $default:expr ; )*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $name {
            /// The options as the host writes them: `key=value,...`.
            pub fn to_opts(&self) -> ::std::string::String {
                let items: ::std::vec::Vec<::std::string::String> = ::std::vec![$(
                    ::std::format!(
                        "{}={}",
                        ::core::stringify!($field),
                        $crate::opts::OptValue::write(&self.$field)
                    )
                ),*];
                items.join(",")
            }

            /// Applies item `o` when its key is one of these options; `Ok(false)` for any other
            /// key, an error naming a bad value.
            pub fn apply(
                &mut self,
                o: &$crate::opts::Opt<'_>,
            ) -> ::core::result::Result<bool, ::std::string::String> {
                match o.key {
                    $( ::core::stringify!($field) => self.$field = $crate::opts::OptValue::read(o)?, )*
                    _ => return ::core::result::Result::Ok(false),
                }
                ::core::result::Result::Ok(true)
            }
        }

        impl $crate::opts::AgentOptions for $name {
            fn to_opts(&self) -> ::std::string::String {
                $name::to_opts(self)
            }
            fn apply(
                &mut self,
                o: &$crate::opts::Opt<'_>,
            ) -> ::core::result::Result<bool, ::std::string::String> {
                $name::apply(self, o)
            }
        }
    };
}

crate::opt_enum! {
    /// Where launch stacks come from (`stacks=agent|ebpf|both|off`, the host's `launch_stacks`).
    #[derive(Default)]
    pub enum StackMode {
        /// The agent walks the stack itself.
        #[default]
        Agent = "agent",
        /// Only the trampoline is called; the eBPF source captures the stack.
        Ebpf = "ebpf",
        /// Both.
        Both = "both",
        /// No launch sites.
        Off = "off",
    }
}

impl StackMode {
    /// True when the agent itself walks launch stacks.
    pub fn agent_walks(self) -> bool {
        matches!(self, Self::Agent | Self::Both)
    }

    /// True when the trampoline is called at launches.
    pub fn trampoline(self) -> bool {
        matches!(self, Self::Ebpf | Self::Both)
    }
}

crate::opt_enum! {
    /// Python frames in launch stacks (`python=auto|off`, the host's `python`).
    #[derive(Default)]
    pub enum PythonMode {
        /// Where the process runs CPython, its frames replace the eval loop's.
        #[default]
        Auto = "auto",
        /// Native frames only.
        Off = "off",
    }
}

crate::agent_options! {
    /// The options every agent takes beside its backend's own (the agent kit's `opts::Common`
    /// holds what they mean in the target).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct CommonOpts {
        /// Where launch stacks come from.
        pub stacks: StackMode = StackMode::Agent;
        /// Most frames per stack (1 to `MAX_STACK_FRAMES`, 1024; more is taken as that).
        pub depth: usize = 64;
        /// Size of one record buffer of the vendor library, KiB (64 to 1048576).
        pub buffer_kib: usize = 8192;
        /// Print a summary line to stderr at exit.
        pub verbose: bool = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_items_and_names_bad_ones() {
        let o = parse("a=1, b=false,,n=42,m=x").unwrap();
        assert_eq!(o.len(), 4);
        assert_eq!((o[0].flag(), o[1].flag()), (Ok(true), Ok(false)));
        assert_eq!(o[2].number::<u32>(), Ok(42));
        assert_eq!(o[3].one_of(&["x", "y"]), Ok(0));
        assert!(o[3].one_of(&["y"]).unwrap_err().contains("must be y"));
        assert!(o[3].flag().unwrap_err().contains("`m` must be 0 or 1"));
        assert!(parse("oops").unwrap_err().contains("`oops` is not key=value"));
        let s = parse("stacks=both,stacks=off,stacks=x").unwrap();
        assert_eq!(s[0].stack_mode(), Ok(StackMode::Both));
        assert!(s[0].stack_mode().unwrap().agent_walks() && s[0].stack_mode().unwrap().trampoline());
        assert!(!s[1].stack_mode().unwrap().agent_walks());
        assert!(s[2].stack_mode().unwrap_err().contains("must be agent, ebpf, both, off"));
        assert_eq!((StackMode::from_word("ebpf"), StackMode::from_word("x")), (Some(StackMode::Ebpf), None));
    }

    #[test]
    fn what_the_host_writes_the_agent_reads_back() {
        let host = CommonOpts { stacks: StackMode::Both, depth: 12, buffer_kib: 64, verbose: true };
        assert_eq!(host.to_opts(), "stacks=both,depth=12,buffer_kib=64,verbose=1");
        let mut agent = CommonOpts::default();
        for o in parse(&format!("{},other=1", host.to_opts())).unwrap() {
            assert_eq!(agent.apply(&o), Ok(o.key != "other"), "{}", o.key);
        }
        assert_eq!(agent, host);
        assert!(agent.apply(&parse("depth=x").unwrap()[0]).unwrap_err().contains("bad number"));
    }

    #[test]
    fn an_unset_option_is_written_empty() {
        assert_eq!((None::<u32>.write(), Some(7u32).write()), (String::new(), "7".to_string()));
        let o = parse("n=,m=7,k=x").unwrap();
        assert_eq!((Option::<u32>::read(&o[0]), Option::<u32>::read(&o[1])), (Ok(None), Ok(Some(7))));
        assert!(Option::<u32>::read(&o[2]).unwrap_err().contains("bad number"));
    }
}
