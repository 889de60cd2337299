//! The server side of leases over a connection, for JavaScript: the engine's remote operations with
//! answers in numbers and the shared buffer, as on the in-process hot path. A hold takes its two ids
//! as four 32-bit words each, most significant first (`request.ts` `idWords`): as hex strings each
//! took an allocation in wasm, a copy and a parse, on every hold. The rarer operations (renew,
//! release by lease, cancel by request) take them as 32 hex digits.

use holdfast_engine::{Hold, Remote, Renewal};
use wasm_bindgen::prelude::*;

use crate::wire::unhex;
use crate::{buffer, id_of, resource_of, status, Core};

#[wasm_bindgen]
impl Core {
    /// A hold over connection `conn` (see `Engine::hold_remote`), its request id and lease id given
    /// as words (`r0` and `l0` the most significant). Answers as `hold` (`now` must be given), or
    /// [`status::RESUMED`] with the request's and key's ids in the buffer and its fence (0 while it
    /// waits) at `buffer::RESUMED_FENCE`.
    #[allow(clippy::too_many_arguments)]
    #[wasm_bindgen(js_name = holdRemote)]
    pub fn hold_remote(
        &mut self,
        res: f64,
        key: f64,
        wait: f64,
        max_hold: f64,
        conn: u32,
        r0: u32,
        r1: u32,
        r2: u32,
        r3: u32,
        l0: u32,
        l1: u32,
        l2: u32,
        l3: u32,
        ttl: f64,
        now: f64,
    ) -> f64 {
        self.reclaim();
        let remote = Remote {
            conn,
            request: id_of_words(r0, r1, r2, r3),
            lease: id_of_words(l0, l1, l2, l3),
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
        answer
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

    /// Releases (or, still waiting, cancels) the live request over a connection whose lease id is
    /// `w0`-`w3` (words as in `holdRemote`), found and ended in one call: a release is every other
    /// message of a client holding keys in turn, and the lookup and the cancel were a call each. The
    /// request's id goes to `buffer::RELEASED`, or -1 when no live request has that lease (nothing is
    /// done then). Answers the events written, as `release`.
    #[wasm_bindgen(js_name = releaseRemote)]
    pub fn release_remote(&mut self, w0: u32, w1: u32, w2: u32, w3: u32, now: f64) -> f64 {
        self.reclaim();
        let found = self
            .inner
            .borrow()
            .engine
            .remote_lease(id_of_words(w0, w1, w2, w3));
        let Some(req) = found else {
            self.buf[buffer::RELEASED] = -1.0;
            return 0.0;
        };
        self.buf[buffer::RELEASED] = req.to_u64() as f64;
        let answer = self.inner.borrow_mut().engine.cancel(req, now as u64);
        self.after(answer.map(drop))
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

    /// How many of a connection's requests wait in line (not away): asked of a silent connection only.
    #[wasm_bindgen(js_name = connectionWaiting)]
    pub fn connection_waiting(&self, conn: u32) -> u32 {
        self.inner.borrow().engine.connection_waiting(conn) as u32
    }

    /// How many requests a connection has, leases and waiting (away ones too): a number with any is
    /// not given to a new connection (remote-holds.ts `nextConnection`).
    #[wasm_bindgen(js_name = connectionRequests)]
    pub fn connection_requests(&self, conn: u32) -> u32 {
        self.inner.borrow().engine.connection_requests(conn) as u32
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

    /// The id of the live request over a connection with this request id (`by_lease` false) or
    /// lease id (`by_lease` true), given as words as in `holdRemote`; -1 when there is none. The host
    /// finds its record by it, rather than keeping the ids a second time (remote-holds.ts).
    #[wasm_bindgen(js_name = remoteReq)]
    pub fn remote_req(&self, by_lease: bool, w0: u32, w1: u32, w2: u32, w3: u32) -> f64 {
        let id = id_of_words(w0, w1, w2, w3);
        let inner = self.inner.borrow();
        let req = if by_lease {
            inner.engine.remote_lease(id)
        } else {
            inner.engine.remote_request(id)
        };
        req.map_or(-1.0, |req| req.to_u64() as f64)
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

/// A 128-bit id from its four 32-bit words, the most significant first.
fn id_of_words(w0: u32, w1: u32, w2: u32, w3: u32) -> u128 {
    (u128::from(w0) << 96) | (u128::from(w1) << 64) | (u128::from(w2) << 32) | u128::from(w3)
}

#[cfg(test)]
mod tests {
    use super::id_of_words;
    use crate::hex::parse_hex;

    #[test]
    fn words_spell_the_id_of_their_hex_digits_in_order() {
        let hex = b"0123456789abcdeffedcba9876543210";
        assert_eq!(
            id_of_words(0x0123_4567, 0x89ab_cdef, 0xfedc_ba98, 0x7654_3210),
            parse_hex(hex).unwrap()
        );
        assert_eq!(
            id_of_words(u32::MAX, 0, 0, 1),
            (u128::from(u32::MAX) << 96) | 1
        );
    }
}
