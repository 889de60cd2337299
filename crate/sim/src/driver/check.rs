//! What the driver checks besides each call's answer and events: the whole state of the engine
//! against the model's after every operation, and bad input refused without changing anything.

use holdfast_engine::bounds::MAX_HOLD_MS;
use holdfast_engine::{Engine, Error, Kind, Remote};

use super::words::{code, opt};
use super::Host;
use crate::model::Target;

impl Host {
    /// After every operation: the whole state of the engine against the model's.
    pub(super) fn check_all(&mut self, engine: &mut Engine) -> Result<(), String> {
        let now = self.now;
        let on_time = !self.mix.late_timers;
        let m = self.model.as_ref().unwrap();
        let fp = engine.footprint();
        if m.closed {
            if engine.inspect(now) != Err(Error::Closed) || (fp.keys, fp.requests) != (0, 0) {
                return Err("close: the engine still answers or keeps requests".into());
            }
        } else {
            engine.check();
            let keys = m.busy_keys().count();
            if (fp.keys, fp.requests) != (keys, m.reqs.len()) {
                return Err(format!(
                    "footprint: the engine keeps {} keys and {} requests, the model {keys} and {}",
                    fp.keys,
                    fp.requests,
                    m.reqs.len()
                ));
            }
            // No idle name kept: the mix's names not forgotten, and the bursts' lock.
            let names = self.forgotten.iter().filter(|&&f| !f).count() + 1;
            if fp.resources != names {
                return Err(format!(
                    "footprint: the engine keeps {} resources, the host {names}",
                    fp.resources
                ));
            }
            let views = engine.inspect(now).map_err(|e| format!("inspect: {e}"))?;
            let want = m.views(now);
            if views != want {
                return Err(format!(
                    "inspect: the engine's {views:?}, the model's {want:?}"
                ));
            }
            for (&req, r) in &m.reqs {
                if r.remote.is_some() || engine.remote_of(req).is_some() {
                    let (got, want) = (engine.remote_of(req), m.remote_view(req));
                    if got != want {
                        return Err(format!(
                            "remote_of({req:?}): the engine's {got:?}, the model's {want:?}"
                        ));
                    }
                }
            }
            for conn in 0..u32::from(self.mix.conns) {
                let (got, want) = (engine.connection_requests(conn), m.on_connection(conn));
                if got != want {
                    return Err(format!(
                        "connection {conn}: the engine counts {got} requests, the model {want}"
                    ));
                }
                let (got, want) = (
                    engine.connection_waiting(conn),
                    m.waiting_on_connection(conn),
                );
                if got != want {
                    return Err(format!(
                        "connection {conn}: the engine counts {got} requests in line, the model {want}"
                    ));
                }
            }
            self.next_deadline(engine)?;
        }
        let m = self.model.as_ref().unwrap();
        m.check(now, on_time).map_err(|e| format!("model: {e}"))?;
        // Fences lent, as the host, the engine and the model see them.
        let lent = self.block.map(|(first, _, end)| (first, end));
        if !m.closed && (engine.fences_lent() != lent.is_some() || m.lent != lent) {
            return Err(format!(
                "lent fences: the host's block {:?}, the engine lends: {}, the model's {:?}",
                self.block,
                engine.fences_lent(),
                m.lent
            ));
        }
        // A key the host granted itself is busy nowhere else, and has at most its limit of holders
        // (a lock's key one).
        for (i, l) in self.locals.iter().enumerate() {
            if m.key(l.res, l.key).is_some() {
                return Err(format!(
                    "exclusion: key r{}/{} granted by the host (fence {}) is busy in the engine",
                    l.res, l.key, l.fence
                ));
            }
            let before = self.locals[..i]
                .iter()
                .filter(|o| (o.res, o.key) == (l.res, l.key))
                .count();
            if before >= m.limit(l.res) as usize {
                return Err(format!(
                    "exclusion: key r{}/{} granted by the host to {} holders, past its limit {}",
                    l.res,
                    l.key,
                    before + 1,
                    m.limit(l.res)
                ));
            }
        }
        if self.max_fence > 0 && self.storage.durable.is_none_or(|d| d < self.max_fence) {
            return Err(format!(
                "storage: holds {:?}, below the fence {} handed out",
                self.storage.durable, self.max_fence
            ));
        }
        self.trace
            .words(&[fp.keys as u64, fp.requests as u64, opt(m.next_deadline())]);
        self.check_pools(engine)
    }

    /// Bad input: refused, and nothing changes (the full check after the operation proves it).
    pub(super) fn bad(&mut self, engine: &mut Engine, what: u8) -> Result<(), String> {
        // Deadlines due are acted on first (as every timed call would), so that the ids picked below
        // are still busy during the call: a dead id is not bad input any more (it names a key anew).
        if !self.model.as_ref().unwrap().closed {
            let now = self.now;
            engine.advance(now);
            self.model().advance(now);
            self.after_call(engine, "bad: deadlines first")?;
        }
        let m = self.model.as_ref().unwrap();
        let valid = m.key(0, 0).map(|k| k.id);
        let busy = m.busy_keys().next().map(|(r, _, k)| (r, k.id));
        let live_lease = m.reqs.values().find_map(|r| r.remote.map(|x| x.lease));
        let closed = m.closed;
        let t = |res, arg| Target { res, key: 0, arg };
        match what % 8 {
            0 => self
                .hold(engine, t(Some(0), valid), Some(10), Some(0), false, None)
                .map(drop),
            1 => self
                .hold(
                    engine,
                    t(Some(0), valid),
                    None,
                    Some(MAX_HOLD_MS + 1),
                    false,
                    None,
                )
                .map(drop),
            2 => self
                .hold(engine, t(None, None), Some(10), None, false, None)
                .map(drop),
            3 => {
                let n = self.mix.resources.len();
                let Some((r, id)) = busy.filter(|_| n > 1) else {
                    return Ok(());
                };
                self.hold(
                    engine,
                    t(Some((r + 1) % n), Some(id)),
                    Some(10),
                    None,
                    false,
                    None,
                )
                .map(drop)
            }
            4 => {
                // A dead key id (the key went idle before the host heard) names the key anew. Only
                // where the key is idle: were it busy under another id, the host would be at fault.
                let Some(stale) = self.last_idle else {
                    return Ok(());
                };
                let local = self.locals.iter().any(|l| (l.res, l.key) == (0, 0));
                if closed || local || self.model().key(0, 0).is_some() {
                    return Ok(());
                }
                self.hold(engine, t(Some(0), Some(stale)), Some(10), None, false, None)
                    .map(drop)
            }
            5 => {
                if let Some(r) = (self.mix.resources.iter()).position(|r| r.kind == Kind::Semaphore)
                {
                    // Forgotten, the name would be new, and any limit its limit.
                    self.registered(engine, r)?;
                }
                let got = match self
                    .mix
                    .resources
                    .iter()
                    .find(|r| r.kind == Kind::Semaphore)
                {
                    Some(s) => engine.resource(Kind::Semaphore, &s.name, s.limit % 8 + 1),
                    None => engine.resource(Kind::Lock, "Bad name", 1),
                };
                let want = if closed { "closed" } else { "invalid" };
                self.trace.word(got.as_ref().map_or_else(code, |_| 0));
                match got {
                    Err(e) if e.code() == want => Ok(()),
                    other => Err(format!("bad: resource answered {other:?}, expected {want}")),
                }
            }
            6 => {
                // A ttl below the bounds.
                let remote = Remote {
                    conn: 0,
                    request: self.draw_id(),
                    lease: self.draw_id(),
                    ttl: 999,
                };
                self.hold(engine, t(Some(0), valid), None, None, false, Some(remote))
                    .map(drop)
            }
            _ => {
                // A lease id the host drew twice: refused, the host draws again.
                let Some(lease) = live_lease else {
                    return Ok(());
                };
                let remote = Remote {
                    conn: 0,
                    request: self.draw_id(),
                    lease,
                    ttl: 1_000,
                };
                self.hold(engine, t(Some(0), valid), None, None, false, Some(remote))
                    .map(drop)
            }
        }
    }
}
