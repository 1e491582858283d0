//! Rust types that can be configuration values, and the typed-struct trait that
//! [`crate::plugin_config!`] implements.

use std::marker::PhantomData;

use toml::{Table, Value};

use super::schema::{ConfigKey, ConfigSchema, ConfigType, KeyProblem};

/// A Rust type a configuration key can have: `bool`, integers, `f64`, `String`, `Vec<String>`,
/// enums declared with [`crate::config_enum!`], and `Option` of those (unset by default).
pub trait ConfigValue: Sized {
    /// The type constraints are stated in (`u64` for `Option<u64>`, `String` for `Vec<String>`).
    type Item;
    /// The value's type in the schema.
    const TYPE: ConfigType;
    /// Converts a checked TOML value; `None` when it does not fit this type.
    fn from_toml(v: &Value) -> Option<Self>;
    /// The value as TOML; `None` for an unset `Option`.
    fn to_toml(&self) -> Option<Value>;
    /// One constraint value as TOML.
    fn item_to_toml(item: &Self::Item) -> Value;
    /// The range the Rust type itself imposes (`u8`: 0 to 255).
    fn type_bounds() -> (Option<Value>, Option<Value>) {
        (None, None)
    }
    /// The values the Rust type itself allows (an enum's names); empty for any.
    fn allowed() -> Vec<Value> {
        Vec::new()
    }
}

impl ConfigValue for bool {
    type Item = bool;
    const TYPE: ConfigType = ConfigType::Bool;
    fn from_toml(v: &Value) -> Option<Self> {
        v.as_bool()
    }
    fn to_toml(&self) -> Option<Value> {
        Some(Value::Boolean(*self))
    }
    fn item_to_toml(item: &bool) -> Value {
        Value::Boolean(*item)
    }
}

macro_rules! integer_value {
    ($($t:ty),*) => {$(
        impl ConfigValue for $t {
            type Item = $t;
            const TYPE: ConfigType = ConfigType::Integer;
            fn from_toml(v: &Value) -> Option<Self> {
                v.as_integer().and_then(|i| <$t>::try_from(i).ok())
            }
            fn to_toml(&self) -> Option<Value> {
                Some(Self::item_to_toml(self))
            }
            fn item_to_toml(item: &$t) -> Value {
                Value::Integer(i64::try_from(*item).unwrap_or(i64::MAX))
            }
            fn type_bounds() -> (Option<Value>, Option<Value>) {
                let lo = i64::try_from(<$t>::MIN).unwrap_or(i64::MIN);
                let hi = i64::try_from(<$t>::MAX).unwrap_or(i64::MAX);
                let lo = (lo != i64::MIN).then_some(Value::Integer(lo));
                let hi = (hi != i64::MAX).then_some(Value::Integer(hi));
                (lo, hi)
            }
        }
    )*};
}

integer_value!(i64, i32, u8, u16, u32, u64, usize);

impl ConfigValue for f64 {
    type Item = f64;
    const TYPE: ConfigType = ConfigType::Float;
    fn from_toml(v: &Value) -> Option<Self> {
        v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
    }
    fn to_toml(&self) -> Option<Value> {
        Some(Value::Float(*self))
    }
    fn item_to_toml(item: &f64) -> Value {
        Value::Float(*item)
    }
}

impl ConfigValue for String {
    type Item = String;
    const TYPE: ConfigType = ConfigType::String;
    fn from_toml(v: &Value) -> Option<Self> {
        v.as_str().map(str::to_owned)
    }
    fn to_toml(&self) -> Option<Value> {
        Some(Value::String(self.clone()))
    }
    fn item_to_toml(item: &String) -> Value {
        Value::String(item.clone())
    }
}

impl ConfigValue for Vec<String> {
    type Item = String;
    const TYPE: ConfigType = ConfigType::StringList;
    fn from_toml(v: &Value) -> Option<Self> {
        v.as_array()?.iter().map(|x| x.as_str().map(str::to_owned)).collect()
    }
    fn to_toml(&self) -> Option<Value> {
        Some(Value::Array(self.iter().cloned().map(Value::String).collect()))
    }
    fn item_to_toml(item: &String) -> Value {
        Value::String(item.clone())
    }
}

impl<T: ConfigValue> ConfigValue for Option<T> {
    type Item = T::Item;
    const TYPE: ConfigType = T::TYPE;
    fn from_toml(v: &Value) -> Option<Self> {
        T::from_toml(v).map(Some)
    }
    fn to_toml(&self) -> Option<Value> {
        self.as_ref().and_then(T::to_toml)
    }
    fn item_to_toml(item: &T::Item) -> Value {
        T::item_to_toml(item)
    }
    fn type_bounds() -> (Option<Value>, Option<Value>) {
        T::type_bounds()
    }
    fn allowed() -> Vec<Value> {
        T::allowed()
    }
}

/// How a default written in [`crate::plugin_config!`] becomes the field's value: the value
/// itself, or a string literal for `String` / `Option<String>` fields and an array of string
/// literals for `Vec<String>` fields.
pub trait FromDefault<X> {
    /// Converts the written default.
    fn from_default(x: X) -> Self;
}

impl<T: ConfigValue> FromDefault<T> for T {
    fn from_default(x: T) -> T {
        x
    }
}

impl FromDefault<&'static str> for String {
    fn from_default(x: &'static str) -> Self {
        x.to_owned()
    }
}

impl FromDefault<&'static str> for Option<String> {
    fn from_default(x: &'static str) -> Self {
        Some(x.to_owned())
    }
}

impl<const N: usize> FromDefault<[&'static str; N]> for Vec<String> {
    fn from_default(x: [&'static str; N]) -> Self {
        x.iter().map(|s| (*s).to_owned()).collect()
    }
}

/// Builds the schema entry of one field; the options of [`crate::plugin_config!`] are its methods.
#[derive(Debug)]
pub struct KeyBuilder<T> {
    key: ConfigKey,
    _ty: PhantomData<T>,
}

impl<T: ConfigValue> KeyBuilder<T> {
    /// The entry of field `name` with its doc lines and default.
    pub fn new(name: &str, doc: &[&str], default: &T) -> Self {
        let mut key = ConfigKey::new(name, T::TYPE, "", "");
        key.doc = doc.iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        key.default = default.to_toml();
        (key.min, key.max) = T::type_bounds();
        key.allowed = T::allowed();
        Self { key, _ty: PhantomData }
    }

    /// Smallest value accepted.
    pub fn min(mut self, v: T::Item) -> Self {
        self.key.min = Some(T::item_to_toml(&v));
        self
    }

    /// Largest value accepted.
    pub fn max(mut self, v: T::Item) -> Self {
        self.key.max = Some(T::item_to_toml(&v));
        self
    }

    /// The only values accepted (each element, for a list).
    pub fn one_of(mut self, values: impl IntoIterator<Item = T::Item>) -> Self {
        self.key.allowed = values.into_iter().map(|v| T::item_to_toml(&v)).collect();
        self
    }

    /// Strings (each element, for a list) must be one word: not empty, no whitespace.
    pub fn word(mut self) -> Self {
        self.key.word = true;
        self
    }

    /// The finished entry.
    pub fn build(self) -> ConfigKey {
        self.key
    }
}

/// Reads field `name` of type `T` from a value the user gave, checked against `schema`.
pub fn read_key<T: ConfigValue>(schema: &ConfigSchema, name: &str, v: &Value) -> Result<T, KeyProblem> {
    let problem = |problem: String| KeyProblem { key: name.to_owned(), problem };
    if let Some(key) = schema.key(name) {
        key.check(v).map_err(problem)?;
    }
    T::from_toml(v).ok_or_else(|| problem(format!("must be {}, found {}", T::TYPE.name(), v.type_str())))
}

/// A plugin's configuration struct: implemented by [`crate::plugin_config!`].
pub trait TypedConfig: Sized + Default {
    /// Every key, derived from the struct's fields.
    fn schema() -> ConfigSchema;

    /// Reads the fields this struct declares from `table` (defaults for absent keys), checking
    /// each value; keys it does not declare are left to [`TypedConfig::from_table`].
    fn from_table_lenient(table: &Table) -> Result<Self, KeyProblem>;

    /// Reads `table`, refusing keys the struct does not declare.
    fn from_table(table: &Table) -> Result<Self, KeyProblem> {
        Self::schema().check_table(table)?;
        Self::from_table_lenient(table)
    }
}

/// Declares a `String`-valued enum usable as a [`crate::plugin_config!`] field: the allowed
/// values in the schema come from its variants.
///
/// ```
/// xpuprof_sdk::config_enum! {
///     /// How kernel names are printed.
///     pub enum KernelNames { Full = "full", Short = "short" }
/// }
/// assert_eq!(KernelNames::Short.as_str(), "short");
/// ```
///
/// The macro derives `Debug, Clone, Copy, PartialEq, Eq, Hash` itself.
#[macro_export]
macro_rules! config_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// The name used in the config file.
            pub fn as_str(self) -> &'static str {
                match self { $( Self::$variant => $text ),+ }
            }
        }

        impl $crate::config::ConfigValue for $name {
            type Item = Self;
            const TYPE: $crate::config::ConfigType = $crate::config::ConfigType::String;
            fn from_toml(v: &$crate::config::Value) -> ::core::option::Option<Self> {
                match v.as_str()? {
                    $( $text => ::core::option::Option::Some(Self::$variant), )+
                    _ => ::core::option::Option::None,
                }
            }
            fn to_toml(&self) -> ::core::option::Option<$crate::config::Value> {
                ::core::option::Option::Some(Self::item_to_toml(self))
            }
            fn item_to_toml(item: &Self) -> $crate::config::Value {
                $crate::config::Value::String(item.as_str().into())
            }
            fn allowed() -> ::std::vec::Vec<$crate::config::Value> {
                ::std::vec![ $( $crate::config::Value::String($text.into()) ),+ ]
            }
        }
    };
}
