//! [`kit_conn!`](crate::kit_conn): a backend's connection state as the kit's [`Conn`].
//!
//! Every backend keeps per connection the kit's part ([`AgentConn`]) beside its own fields, and
//! the kit reaches it through [`Conn`]; the two accessors are the same in every backend, so they
//! are written once here.
//!
//! [`Conn`]: crate::agent_host::Conn
//! [`AgentConn`]: crate::agent_host::AgentConn

/// Implements [`Conn`](crate::agent_host::Conn) for a backend's connection struct whose kit
/// part is its field `agent` (an [`AgentConn`](crate::agent_host::AgentConn)):
///
/// ```
/// use xpuprof_toolbox::agent_host::AgentConn;
///
/// #[derive(Debug, Default)]
/// struct MyConn {
///     agent: AgentConn,
///     queues: u32,
/// }
///
/// xpuprof_toolbox::kit_conn!(MyConn);
/// ```
#[macro_export]
macro_rules! kit_conn {
    ($conn:ty) => {
        impl $crate::agent_host::Conn for $conn {
            fn agent(&self) -> &$crate::agent_host::AgentConn {
                &self.agent
            }

            fn agent_mut(&mut self) -> &mut $crate::agent_host::AgentConn {
                &mut self.agent
            }
        }
    };
}
