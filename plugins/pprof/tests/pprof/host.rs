//! The sink inside the real host.
