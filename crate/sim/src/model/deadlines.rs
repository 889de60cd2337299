//! Deadlines: found by looking at every request, and acted on by `advance`, earliest first.

use holdfast_engine::{Event, Id};

use super::{Model, State};

/// A deadline [`Model::advance`] acted on.
#[derive(Clone, Copy, Debug)]
pub struct Acted {
    pub res: usize,
    pub key: usize,
    /// 0: a wait ran out; 1: a revoke at `maxHold`; 2: a lease over a connection expired; 3: a
    /// waiter away for its ttl was ended.
    pub due: u8,
    /// Whether the key went on to the next in line in the same step.
    pub handed_on: bool,
}

impl Model {
    /// Every live deadline: (at, request, 0 for a wait, 1 for a revoke, 2 for an expiry, 3 for the
    /// end of an absence).
    fn deadlines(&self) -> Vec<(u64, Id, u8)> {
        let mut all = Vec::new();
        for (&id, r) in &self.reqs {
            match r.state {
                State::Waiting { deadline, away, .. } => {
                    if let Some(at) = deadline {
                        all.push((at, id, 0));
                    }
                    if let Some(at) = away {
                        all.push((at, id, 3));
                    }
                }
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => {
                    if let Some(at) = revoke_at {
                        all.push((at, id, 1));
                    }
                    if let Some(at) = expires_at {
                        all.push((at, id, 2));
                    }
                }
            }
        }
        all.sort_unstable();
        all
    }

    /// The earliest deadline of keys and pools (none once closed: a closed store's claims wait for
    /// nothing).
    pub fn next_deadline(&self) -> Option<u64> {
        let pools = if self.closed {
            None
        } else {
            self.pools.next_deadline()
        };
        match (self.lock_deadline(), pools) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest deadline of a hold or lease (what the untimed calls look at).
    pub fn lock_deadline(&self) -> Option<u64> {
        self.reqs
            .values()
            .flat_map(|r| match r.state {
                State::Waiting { deadline, away, .. } => [deadline, away],
                State::Holding {
                    revoke_at,
                    expires_at,
                    ..
                } => [revoke_at, expires_at],
            })
            .flatten()
            .min()
    }

    /// Acts on every deadline at or before `now`. Answers what it acted on, for coverage marks.
    pub fn advance(&mut self, now: u64) -> Vec<Acted> {
        let mut acted = Vec::new();
        if self.closed {
            return acted;
        }
        self.last_now = self.last_now.max(now);
        // Acting on a deadline may change the others (a grant starts its own maxHold and ttl, from
        // `now`, not from the deadline): the earliest is found again after each.
        while let Some((at, id, due)) = self.deadlines().into_iter().next().filter(|d| d.0 <= now) {
            let Some(r) = self.reqs.get(&id) else {
                continue;
            };
            let (res, key) = (r.res, r.key);
            let live = match (r.state, due) {
                (State::Waiting { deadline, .. }, 0) => deadline == Some(at),
                (State::Waiting { away, .. }, 3) => away == Some(at),
                (State::Holding { revoke_at, .. }, 1) => revoke_at == Some(at),
                (State::Holding { expires_at, .. }, 2) => expires_at == Some(at),
                _ => false,
            };
            if !live {
                continue;
            }
            let r = self.remove(id);
            let k = self.keys[res][key].as_mut().unwrap();
            match r.state {
                State::Waiting { .. } => k.line.retain(|&w| w != id),
                State::Holding { .. } => k.holders.retain(|&h| h != id),
            }
            self.events.push(match due {
                0 => Event::TimedOut { req: id },
                1 => Event::Revoked { req: id },
                2 => Event::Expired { req: id },
                _ => Event::Ended {
                    req: id,
                    held: false,
                },
            });
            let before = self.events.len();
            self.pump_at(res, key, at, now);
            let handed_on = self.events[before..]
                .iter()
                .any(|e| matches!(e, Event::Granted { .. }));
            acted.push(Acted {
                res,
                key,
                due,
                handed_on,
            });
        }
        self.pool_acted = self.pools.advance(now, &mut self.events);
        acted
    }
}
