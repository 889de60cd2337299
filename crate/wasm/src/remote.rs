//! The server side of leases over a connection, for JavaScript: the engine's remote operations with
//! ids as hex and answers in numbers and the shared buffer, as on the in-process hot path.

use holdfast_engine::{Hold, Remote, Renewal};
use wasm_bindgen::prelude::*;

use crate::wire::unhex;
use crate::{buffer, id_of, resource_of, status, Core};

#[wasm_bindgen]
impl Core {
    /// A hold over connection `conn` (see `Engine::hold_remote`). Answers as `hold` (`now` must be
    /// given), or [`status::RESUMED`] with the request's and key's ids in the buffer and its fence (0 while
    /// it waits) at `buffer::RESUMED_FENCE`.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = holdRemote)]
    pub fn hold_remote(
        &mut self,
        res: f64,
        key: f64,
        wait: f64,
        max_hold: f64,
        conn: u32,
        request: &str,
        lease: &str,
        ttl: f64,
        now: f64,
    ) -> Result<f64, JsValue> {
        self.reclaim();
        let remote = Remote {
            conn,
            request: unhex(request, "request")?,
            lease: unhex(lease, "lease")?,
            ttl: ttl as u64,
        };
        let key = if key < 0.0 { None } else { id_of(key) };
        let wait = if wait < 0.0 { None } else { Some(wait as u64) };
        let max_hold = if max_hold > 0.0 {
            Some(max_hold as u64)
        } else {
            None
        };
        let answer = self.inner.borrow_mut().engine.hold_remote(
            resource_of(res),
            key,
            wait,
            max_hold,
            remote,
            now as u64,
        );
        let answer = match answer {
            Ok(Hold::Resumed { req, key, fence }) => {
                self.buf[buffer::REQ] = req.to_u64() as f64;
                self.buf[buffer::KEY] = key.to_u64() as f64;
                self.buf[buffer::RESUMED_FENCE] = fence.unwrap_or(0) as f64;
                status::RESUMED
            }
            other => self.hold_answer(other),
        };
        self.persist_if_asked();
        self.buf[buffer::HOLD_EVENTS] = self.write_events();
        Ok(answer)
    }

    /// Renews a lease for its ttl from `now`: answers the ttl in ms (its `maxHold` remaining at
    /// `buffer::REVOKE_IN`, or -1), or 0 when the lease is lost. Events it caused (a lease found past
    /// its ttl ends now) are counted at `buffer::HOLD_EVENTS`.
    pub fn renew(&mut self, lease: &str, now: f64) -> Result<f64, JsValue> {
        self.reclaim();
        let lease = unhex(lease, "lease")?;
        let answer = self.inner.borrow_mut().engine.renew(lease, now as u64);
        let answer = match answer {
            Ok(Renewal::Renewed { ttl, revoke_in }) => {
                self.buf[buffer::REVOKE_IN] = revoke_in.map_or(-1.0, |r| r as f64);
                ttl as f64
            }
            Ok(Renewal::Lost) => 0.0,
            Err(error) => status::of(&error),
        };
        self.persist_if_asked();
        self.buf[buffer::HOLD_EVENTS] = self.write_events();
        Ok(answer)
    }

    /// Releases a lease named by its lease id. Answers the events written, as `release`.
    #[wasm_bindgen(js_name = releaseLease)]
    pub fn release_lease(&mut self, lease: &str, now: f64) -> Result<f64, JsValue> {
        self.reclaim();
        let lease = unhex(lease, "lease")?;
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .release_lease(lease, now as u64);
        Ok(self.after(answer.map(drop)))
    }

    /// Cancels a request named by its request id. Answers the events written, as `release`.
    #[wasm_bindgen(js_name = cancelRequest)]
    pub fn cancel_request(&mut self, request: &str, now: f64) -> Result<f64, JsValue> {
        self.reclaim();
        let request = unhex(request, "request")?;
        let answer = self
            .inner
            .borrow_mut()
            .engine
            .cancel_request(request, now as u64);
        Ok(self.after(answer.map(drop)))
    }

    /// A connection ended; with `goodbye` its leases end too. Every request that ended is an `ENDED`
    /// event. Answers the events written.
    #[wasm_bindgen(js_name = connectionEnded)]
    pub fn connection_ended(&mut self, conn: u32, goodbye: bool, now: f64) -> f64 {
        self.reclaim();
        {
            let engine = &mut self.inner.borrow_mut().engine;
            if goodbye {
                engine.goodbye(conn, now as u64);
            } else {
                engine.connection_closed(conn, now as u64);
            }
        }
        self.after(Ok(()))
    }

    /// How long until a request's `maxHold` revokes it, from `now`; -1 for none (or not holding).
    #[wasm_bindgen(js_name = revokeIn)]
    pub fn revoke_in(&self, req: f64, now: f64) -> f64 {
        let inner = self.inner.borrow();
        id_of(req)
            .and_then(|req| inner.engine.remote_of(req))
            .and_then(|v| v.revoke_at)
            .map_or(-1.0, |at| at.saturating_sub(now as u64) as f64)
    }

    /// How many requests one connection may have, leases and waiting together.
    #[wasm_bindgen(js_name = setConnectionLimit)]
    pub fn set_connection_limit(&mut self, limit: u32) {
        self.reclaim();
        self.inner
            .borrow_mut()
            .engine
            .set_connection_limit(limit as usize);
    }
}
