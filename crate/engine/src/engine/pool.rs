//! Pools on the engine (issue #16): the commands, handlers and polls of `pool/`, under the calling
//! rules. Every command that takes `now` acts on every deadline first (rule 1), the locks' and the
//! pools'; every one answers `closed` once the engine is closed. Pool requests are answered by the
//! pool events ([`crate::Event::Claimed`], `NotClaimed`, `Durable`, `PoolFailed`, `PoolEnded`),
//! whose ids name pool requests, never holds.
//!
//! # Storage
//! Pools write to storage apart from the fence ceiling: [`Engine::poll_pool_write`] hands the host
//! the next write (keys and their values, set in order), at most one under way, and the host answers
//! [`Engine::pool_written`] or [`Engine::pool_write_failed`]. The host takes it once a turn of its
//! event loop, not after every call, so that one write keeps every claim of the turn (group
//! commit); no claim is answered before the write that keeps it is acknowledged (POOL-02). A store
//! that opens reads its pools back first ([`PoolLoad`], [`Engine::open_pools`]).

use super::hold::Cancelled;
use super::Engine;
use crate::error::Error;
use crate::pool::{Claim, Confirm, PoolId, PoolLoad, PoolView, PoolWrite};
use crate::slab::Id;

impl Engine {
    /// Names (or makes) the pool `name` of `capacity` units (1 to 2^53 − 1), fixed by its first use:
    /// asked again with another capacity, `invalid` naming both.
    pub fn pool(&mut self, name: &str, capacity: u64) -> Result<PoolId, Error> {
        self.check_open()?;
        self.pools.pool(name, capacity)
    }

    /// The pool of this name, if one was made (or read back).
    pub fn find_pool(&self, name: &str) -> Option<PoolId> {
        self.pools.find(name)
    }

    /// Claims `n` units of `pool` as claim `id` (see `pool/`'s rules; `remember`: keep the id 24
    /// hours; `wait`: `None` without limit, `Some(0)` not at all; `ttl`: its units come back unless
    /// confirmed). [`Claim::Writing`] and [`Claim::Queued`] are answered by an event later.
    #[allow(clippy::too_many_arguments)]
    pub fn claim(
        &mut self,
        pool: PoolId,
        n: u64,
        id: &str,
        remember: bool,
        wait: Option<u64>,
        ttl: Option<u64>,
        now: u64,
    ) -> Result<Claim, Error> {
        self.check_open()?;
        self.advance(now);
        self.pools.claim(pool, n, id, remember, wait, ttl, now)
    }

    /// Gives back the units of claim `id` of `pool`, once: a request answered
    /// [`crate::Event::Durable`] once storage kept the release, or `None` when no open claim has that
    /// id. Claims waiting in line that now fit take their units in this call. Of a claim still being
    /// written that is then undone, it acted on nothing: answered [`crate::Event::NoClaim`].
    pub fn release_claim(&mut self, pool: PoolId, id: &str, now: u64) -> Result<Option<Id>, Error> {
        self.check_open()?;
        self.advance(now);
        self.pools.release(pool, id, now)
    }

    /// Undoes the open claim `id` of `pool` (see `Pools::withdraw`): a request answered
    /// [`crate::Event::Durable`] once storage kept it, or `None` when no open, answered claim has that id.
    pub fn withdraw_claim(
        &mut self,
        pool: PoolId,
        id: &str,
        now: u64,
    ) -> Result<Option<Id>, Error> {
        self.check_open()?;
        self.advance(now);
        self.pools.withdraw(pool, id, now)
    }

    /// Confirms claim `id` of `pool`: its ttl is gone, its units stay until released. Of a claim still
    /// being written that is then undone, it acted on nothing: answered [`crate::Event::NoClaim`].
    pub fn confirm_claim(&mut self, pool: PoolId, id: &str, now: u64) -> Result<Confirm, Error> {
        self.check_open()?;
        self.advance(now);
        self.pools.confirm(pool, id)
    }

    /// Changes a pool's capacity, never below what is claimed (`invalid`, naming both). `None` when
    /// nothing changes; else a request answered [`crate::Event::Durable`] once storage kept it.
    pub fn resize_pool(
        &mut self,
        pool: PoolId,
        capacity: u64,
        now: u64,
    ) -> Result<Option<Id>, Error> {
        self.check_open()?;
        self.advance(now);
        self.pools.resize(pool, capacity, now, &mut self.events)
    }

    /// Ends a pool request the host no longer wants: a waiting claim leaves its line; a claim that
    /// took its units but was not yet answered gives them back ([`Cancelled::Released`]).
    pub fn cancel_claim(&mut self, req: Id, now: u64) -> Result<Cancelled, Error> {
        self.check_open()?;
        self.advance(now);
        Ok(self.pools.cancel(req, now, &mut self.events))
    }

    /// Units left in `pool`, deadlines up to `now` acted on first.
    pub fn pool_remaining(&mut self, pool: PoolId, now: u64) -> Result<u64, Error> {
        self.check_open()?;
        self.advance(now);
        self.pools.remaining(pool)
    }

    /// Whether pool request `req` is a claim waiting in line (a read: deadlines not acted on). The
    /// host answers each ask of a joined claim by its own wait only while the claim waits: one that
    /// took its units is answered to every ask once written.
    pub fn claim_waits(&self, req: Id) -> bool {
        self.pools.waits(req)
    }

    /// Whether claim `id` of `pool` took its units and gave them back, its id still remembered (a
    /// read: deadlines not acted on). A server answers a release asked again after a dropped
    /// connection by it: the units are back, by that release or before it.
    pub fn claim_handed_back(&self, pool: PoolId, id: &str) -> bool {
        self.pools.handed_back(pool, id)
    }

    /// Whether claim `id` of `pool` is open, holding its units (a read: deadlines not acted on). A
    /// server forgets what it kept of a claim's answers once it is not.
    pub fn claim_open(&self, pool: PoolId, id: &str) -> bool {
        self.pools.is_open(pool, id)
    }

    /// The name, capacity and remaining units of a pool (a read: deadlines not acted on).
    pub fn pool_info(&self, pool: PoolId) -> Option<(&str, u64, u64)> {
        self.pools.info(pool)
    }

    /// Every pool: name, capacity, remaining, open claims, waiting claims (a read).
    pub fn inspect_pools(&self) -> Result<Vec<PoolView>, Error> {
        self.check_open()?;
        Ok(self.pools.views())
    }

    /// Reads the pools back from what storage holds (`load`, read to its end: see [`PoolLoad`]),
    /// before any pool is named. `now` and `wall` are one instant on the engine's clock and on the
    /// wall clock in ms: stored times are wall clock, so that a ttl and a tombstone's 24 hours go
    /// on across restarts. `invalid` when called late or when storage holds what POOL-01 forbids.
    pub fn open_pools(&mut self, load: PoolLoad, now: u64, wall: u64) -> Result<(), Error> {
        self.check_open()?;
        self.last_now = self.last_now.max(now);
        self.pools.open(load, now, wall)
    }

    /// Lowers the longest value a pools' write hands the host to `bytes` (from
    /// [`crate::pool::MAX_VALUE_BYTES`]; at least [`crate::pool::MIN_VALUE_BYTES`], which holds any
    /// one line of a snapshot or segment): for tests and simulations, so that snapshots of a few
    /// claims already take chunks. `invalid` out of those bounds.
    pub fn set_pool_value_limit(&mut self, bytes: usize) -> Result<(), Error> {
        self.pools.set_value_limit(bytes)
    }

    /// The pools' next write, if one is wanted and none is under way (see the module docs). Also
    /// after [`Engine::close`]: what changed before it is still written.
    pub fn poll_pool_write(&mut self) -> Option<PoolWrite> {
        self.pools.poll_write()
    }

    /// Whether the pools changed and no write is under way: the host takes one this turn.
    pub fn pool_write_wanted(&self) -> bool {
        self.pools.write_wanted()
    }

    /// Whether a pool request's answer waits for the next pools' write (not one under way): a host
    /// that waits before making that write (a retry after a failed one) keeps its process alive.
    pub fn pool_write_awaited(&self) -> bool {
        self.pools.write_awaited()
    }

    /// Whether a pool write was taken and not yet answered. A host that lets its storage go waits
    /// for it first.
    pub fn pool_write_pending(&self) -> bool {
        self.pools.write_pending()
    }

    /// Storage acknowledged pool write `seq`: the requests it keeps are answered.
    pub fn pool_written(&mut self, seq: u64, now: u64) {
        if !self.closed {
            self.advance(now);
        }
        self.pools.written(seq, &mut self.events);
    }

    /// Storage failed to keep pool write `seq`: its claims give their units back and are answered
    /// [`crate::Event::PoolFailed`], as are its confirms and resizes (which stand, and are written again),
    /// but for the releases and confirms of a claim it undid ([`crate::Event::NoClaim`]).
    pub fn pool_write_failed(&mut self, seq: u64, now: u64) {
        if !self.closed {
            self.advance(now);
        }
        self.pools.write_failed(seq, now, &mut self.events);
    }
}
