//! The request record: what one hold is doing (waiting, then holding), and the one place a request
//! ends.
//!
//! A request lives in the engine's slab from its hold until it ends, and is answered once (calling
//! rule 4). [`Engine::end_request`] is the only way out of the slab: it forgets the request's timer
//! entries and connection ids and takes it off its key or its line, so that no index outlives it.

use super::deadlines::timer_is_live;
use super::remote::Remote;
use super::Engine;
use crate::packed::Packed64;
use crate::slab::{Id, Slab};

/// What a request is doing. Its times and fence are [`Packed64`]s (aligned to 4), so that a request's
/// record has no padding: on wasm32 a [`Request`] takes 52 bytes and its slab place 56, where `u64`s
/// made them 72 and 80 (see `packed.rs`). One is kept for every held key.
#[derive(Clone, Copy, Debug)]
pub(super) enum State {
    Waiting {
        deadline: Option<Packed64>,
        max_hold: Option<Packed64>,
        /// Away (its connection dropped) until then: passed over, keeping its place (see `line.rs`).
        away: Option<Packed64>,
    },
    Holding {
        fence: Packed64,
        since: Packed64,
        revoke_at: Option<Packed64>,
        /// For a lease over a connection: when it ends unless renewed (LOCK-05).
        expires_at: Option<Packed64>,
    },
}

impl State {
    /// How many timer entries stand for a request in this state.
    pub(super) fn timers(&self) -> usize {
        match *self {
            State::Waiting { deadline, away, .. } => {
                deadline.is_some() as usize + away.is_some() as usize
            }
            State::Holding {
                revoke_at,
                expires_at,
                ..
            } => revoke_at.is_some() as usize + expires_at.is_some() as usize,
        }
    }
}

#[derive(Debug)]
pub(super) struct Request {
    pub(super) key: Id,
    pub(super) state: State,
    /// What a request made over a connection carries (see `remote.rs`).
    pub(super) remote: Option<Box<Remote>>,
}

pub(super) fn is_waiting(reqs: &Slab<Request>, id: Id) -> bool {
    matches!(
        reqs.get(id),
        Some(Request {
            state: State::Waiting { .. },
            ..
        })
    )
}

pub(super) fn is_away(reqs: &Slab<Request>, id: Id) -> bool {
    matches!(
        reqs.get(id),
        Some(Request {
            state: State::Waiting { away: Some(_), .. },
            ..
        })
    )
}

impl Engine {
    /// Ends a request: the one place requests leave the slab. Forgets its timer entries and its
    /// remote ids, takes it off its key (a holder) or its line (a waiter), and answers it with the
    /// key it was on. The caller then pumps the key.
    pub(super) fn end_request(&mut self, req: Id) -> Request {
        let request = self.reqs.remove(req).expect("a live request");
        self.timers
            .forget(request.state.timers(), |e| timer_is_live(&self.reqs, e));
        if let Some(remote) = &request.remote {
            self.remotes.unindex(req, remote);
        }
        let key = self
            .keys
            .get_mut(request.key)
            .expect("a request's key is busy");
        match request.state {
            State::Holding { .. } => key.held -= 1,
            State::Waiting { away, .. } => {
                if away.is_some() {
                    key.line.set_away(-1);
                }
                let reqs = &self.reqs;
                key.line.left(|id| is_waiting(reqs, id));
            }
        }
        request
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{align_of, size_of};

    /// What a held key costs is mostly its request's record, and its place in the slab adds the
    /// place's generation: these sizes are the ones measured.
    #[test]
    fn a_request_record_has_no_padding() {
        assert_eq!((size_of::<State>(), align_of::<State>()), (40, 4));
        #[cfg(target_pointer_width = "32")]
        assert_eq!(
            (size_of::<Request>(), Slab::<Request>::PLACE_SIZE),
            (52, 56)
        );
        #[cfg(target_pointer_width = "64")]
        assert_eq!(
            (size_of::<Request>(), Slab::<Request>::PLACE_SIZE),
            (56, 64)
        );
    }
}
