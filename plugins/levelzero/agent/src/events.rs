//! The agent's own timestamp events: one set of pools per context, created with
//! `ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP | ZE_EVENT_POOL_FLAG_HOST_VISIBLE`, handed out to
//! launches whose application passed no event or one without timestamps.

use std::collections::HashMap;

use level_zero_sys::*;

use crate::sys::{check, ZeError};

/// Events per pool.
const POOL_EVENTS: u32 = 256;

#[derive(Debug, Default)]
struct ContextPools {
    pools: Vec<usize>,
    events: Vec<usize>,
    free: Vec<usize>,
}

/// Our pools, per context.
#[derive(Debug, Default)]
pub struct Pools {
    by_context: HashMap<usize, ContextPools>,
    /// Our event → its context.
    pub ours: HashMap<usize, usize>,
}

impl Pools {
    /// A free event of `context`, creating a pool when none is left.
    pub fn take(&mut self, ze: &ZeLoader, context: usize) -> Result<usize, ZeError> {
        let c = self.by_context.entry(context).or_default();
        if c.free.is_empty() {
            let desc = ze_event_pool_desc_t {
                stype: _ze_structure_type_t::ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
                pNext: std::ptr::null(),
                flags: _ze_event_pool_flag_t::ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP
                    | _ze_event_pool_flag_t::ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                count: POOL_EVENTS,
            };
            let mut pool: ze_event_pool_handle_t = std::ptr::null_mut();
            // SAFETY: `context` is a live context of the application; `desc` and `pool` are locals.
            check("zeEventPoolCreate", unsafe {
                ze.zeEventPoolCreate(context as _, &desc, 0, std::ptr::null_mut(), &mut pool)
            })?;
            c.pools.push(pool as usize);
            for index in 0..POOL_EVENTS {
                let ed = ze_event_desc_t {
                    stype: _ze_structure_type_t::ZE_STRUCTURE_TYPE_EVENT_DESC,
                    pNext: std::ptr::null(),
                    index,
                    signal: _ze_event_scope_flag_t::ZE_EVENT_SCOPE_FLAG_HOST,
                    wait: _ze_event_scope_flag_t::ZE_EVENT_SCOPE_FLAG_HOST,
                };
                let mut ev: ze_event_handle_t = std::ptr::null_mut();
                // SAFETY: `pool` was just created with POOL_EVENTS slots.
                check("zeEventCreate", unsafe { ze.zeEventCreate(pool, &ed, &mut ev) })?;
                c.events.push(ev as usize);
                c.free.push(ev as usize);
                self.ours.insert(ev as usize, context);
            }
        }
        Ok(c.free.pop().expect("a pool was just filled"))
    }

    /// Resets `event` and makes it free again.
    pub fn give_back(&mut self, ze: &ZeLoader, event: usize) {
        let Some(&ctx) = self.ours.get(&event) else { return };
        // SAFETY: `event` is one of our events, alive while its context is.
        let _ = unsafe { ze.zeEventHostReset(event as _) };
        if let Some(c) = self.by_context.get_mut(&ctx) {
            c.free.push(event);
        }
    }

    /// Destroys our events and pools of `context` (the application destroys the context).
    pub fn destroy_context(&mut self, ze: &ZeLoader, context: usize) {
        let Some(c) = self.by_context.remove(&context) else { return };
        for e in c.events {
            self.ours.remove(&e);
            // SAFETY: `e` is our event of a context that is still alive (called before its destroy).
            let _ = unsafe { ze.zeEventDestroy(e as _) };
        }
        for p in c.pools {
            // SAFETY: as above, for our pool.
            let _ = unsafe { ze.zeEventPoolDestroy(p as _) };
        }
    }
}
