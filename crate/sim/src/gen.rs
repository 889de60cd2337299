//! Drawing the next operation: from the seed's mix, weighed by what the world looks like now.
//!
//! The draw looks at the world only to avoid waste (no release drawn when nobody holds, no storage
//! answer when no write is under way, no new hold above the mix's cap of live requests) and to lean
//! towards corners when they are there to be had (a cancel right after grants came by event). What it
//! draws still describes itself (see `op.rs`): the world it looked at is not needed to replay it.
//!
//! # Invariant
//! The draw is a function of the stream and the view, so a seed always draws the same run.

use holdfast_engine::bounds::{MAX_HOLD_MS, TTL_MS};
use holdfast_engine::fence::BLOCK;

use crate::op::{Op, Outcome, Whom};
use crate::rng::Rng;
use crate::swarm::{Draw, Mix, DRAWS};

/// The host asks for the next ceiling when fewer than this many covered fences are left (the
/// README's "asked for at half the block").
pub const LOW_WATER: u64 = BLOCK / 2;

/// What the draw may look at.
#[derive(Clone, Copy, Debug, Default)]
pub struct View {
    pub waiting: usize,
    pub holding: usize,
    /// Requests granted by events of the previous call, still holding.
    pub granted: usize,
    /// Requests that ended lately.
    pub ended: usize,
    pub in_flight: bool,
    pub closed: bool,
    /// Whether any deadline is pending.
    pub deadline: bool,
    /// Fences still covered by acknowledged ceilings.
    pub fences_left: u64,
    /// Whether bursts may still run (each run has a budget of grants for them).
    pub bursts_left: bool,
    /// Clients over a connection the host remembers.
    pub clients: usize,
    /// Leases the host granted itself and still keeps.
    pub locals: usize,
    /// Pool requests live (waiting in line, or for their write).
    pub pool_reqs: usize,
    /// Open claims of pools.
    pub claims: usize,
    /// Whether a pools' write is under way.
    pub pool_in_flight: bool,
}

fn small(rng: &mut Rng) -> u16 {
    rng.below(64) as u16
}

fn wait(rng: &mut Rng, mix: &Mix) -> Option<u64> {
    match rng.weighted(&mix.waits) {
        0 => None,
        1 => Some(rng.range(1, 50)),
        2 => Some(rng.range(51, 5_000)),
        _ => Some(rng.range(5_001, 3_600_000)),
    }
}

fn ttl(rng: &mut Rng, mix: &Mix) -> u64 {
    match rng.weighted(&mix.ttls) {
        0 => TTL_MS.0,
        1 => rng.range(TTL_MS.0, 10_000),
        _ => rng.range(10_001, TTL_MS.1),
    }
}

fn max_hold(rng: &mut Rng, mix: &Mix) -> Option<u64> {
    match rng.weighted(&mix.max_holds) {
        0 => None,
        1 => Some(rng.range(1, 50)),
        2 => Some(rng.range(51, 60_000)),
        3 => Some(rng.range(60_001, MAX_HOLD_MS)),
        _ => Some(MAX_HOLD_MS),
    }
}

/// The next operation of a run.
pub fn next(rng: &mut Rng, mix: &Mix, view: &View) -> Op {
    if view.closed && rng.chance(400) {
        return Op::Reopen {
            landed: rng.chance(500),
            clock: rng.below(1 << 40),
        };
    }
    let mut w = mix.weights;
    let mut off = |d: Draw| w[d as usize] = 0;
    if view.waiting + view.holding + view.locals >= mix.cap {
        off(Draw::Hold);
        off(Draw::Try);
        off(Draw::Remote);
        off(Draw::Local);
    }
    if view.pool_reqs + view.claims >= mix.cap {
        off(Draw::Claim);
        off(Draw::ClaimId);
    }
    if view.claims == 0 {
        off(Draw::PoolRelease);
        off(Draw::Confirm);
    }
    if view.pool_reqs == 0 {
        off(Draw::PoolCancel);
    }
    if !view.pool_in_flight {
        off(Draw::PoolWriteOk);
        off(Draw::PoolWriteFail);
    }
    if view.locals == 0 {
        off(Draw::LocalRelease);
    }
    if view.clients == 0 {
        off(Draw::AskAgain);
        off(Draw::Renew);
        off(Draw::ReleaseLease);
        off(Draw::CancelRequest);
    }
    if view.holding == 0 {
        off(Draw::Release);
        off(Draw::CancelHolding);
    }
    if view.waiting == 0 {
        off(Draw::CancelWaiting);
    }
    if view.granted == 0 {
        off(Draw::CancelGranted);
    }
    if !view.in_flight {
        off(Draw::WriteOk);
        off(Draw::WriteFail);
    }
    if view.ended == 0 {
        off(Draw::CancelEnded);
        off(Draw::Again);
    }
    if !view.deadline {
        off(Draw::Deadline);
    }
    if view.closed || view.fences_left < 2 || !view.bursts_left {
        off(Draw::Burst);
    }
    if w.iter().all(|&x| x == 0) {
        return Op::Tick { ms: 1 };
    }
    let pick = |rng: &mut Rng| small(rng);
    let conn = |rng: &mut Rng| rng.below(u64::from(mix.conns)) as u8;
    let place = |rng: &mut Rng| {
        let res = rng.below(mix.resources.len() as u64) as u8;
        (
            res,
            rng.below(u64::from(mix.resources[res as usize].keys)) as u8,
        )
    };
    match DRAWS[rng.weighted(&w)] {
        draw @ (Draw::Hold | Draw::Try) => {
            let (res, key) = place(rng);
            Op::Hold {
                res,
                key,
                wait: if draw == Draw::Try {
                    Some(0)
                } else {
                    wait(rng, mix)
                },
                max_hold: max_hold(rng, mix),
                fast: rng.chance(mix.fast),
            }
        }
        Draw::Release => Op::Release {
            pick: pick(rng),
            fast: rng.chance(mix.fast),
        },
        Draw::Remote => {
            let (res, key) = place(rng);
            Op::Remote {
                res,
                key,
                conn: conn(rng),
                wait: if rng.chance(150) {
                    Some(0)
                } else {
                    wait(rng, mix)
                },
                max_hold: max_hold(rng, mix),
                ttl: ttl(rng, mix),
            }
        }
        Draw::AskAgain => Op::AskAgain {
            pick: pick(rng),
            conn: conn(rng),
        },
        Draw::Renew => Op::Renew { pick: pick(rng) },
        Draw::ReleaseLease => Op::ReleaseLease { pick: pick(rng) },
        Draw::CancelRequest => Op::CancelRequest { pick: pick(rng) },
        Draw::Drop => Op::Drop { conn: conn(rng) },
        Draw::Goodbye => Op::Goodbye { conn: conn(rng) },
        Draw::CancelWaiting => Op::Cancel {
            whom: Whom::Waiting,
            pick: pick(rng),
        },
        Draw::CancelHolding => Op::Cancel {
            whom: Whom::Holding,
            pick: pick(rng),
        },
        Draw::CancelGranted => Op::Cancel {
            whom: Whom::Granted,
            pick: pick(rng),
        },
        Draw::CancelEnded => Op::Cancel {
            whom: Whom::Ended,
            pick: pick(rng),
        },
        Draw::Again => Op::Again { pick: pick(rng) },
        Draw::TickSmall => Op::Tick {
            ms: if rng.chance(850) {
                rng.range(1, 20)
            } else {
                rng.range(21, 2_000)
            },
        },
        Draw::TickBig => Op::Tick {
            // An hour to a little over the longest maxHold: a process frozen, a laptop asleep.
            ms: rng.range(3_600_000, MAX_HOLD_MS + 86_400_000),
        },
        Draw::Deadline => Op::ToDeadline,
        Draw::WriteOk => Op::Write(Outcome::Ok),
        Draw::WriteFail => Op::Write(if rng.chance(500) {
            Outcome::FailLanded
        } else {
            Outcome::FailLost
        }),
        Draw::Crash => Op::Crash {
            landed: rng.chance(500),
            clock: rng.below(1 << 40),
        },
        Draw::Close => Op::Close,
        Draw::Burst => {
            // To just above or just past half the block (where the next ceiling is asked for), or to
            // the very end of what is covered (the next hold waits for storage).
            let choices = [LOW_WATER + 1, LOW_WATER - 1, 0];
            let fitting: Vec<u64> = choices
                .into_iter()
                .filter(|&l| l < view.fences_left)
                .collect();
            Op::Burst {
                leave: fitting[rng.below(fitting.len() as u64) as usize],
            }
        }
        Draw::Bad => Op::Bad {
            what: rng.below(8) as u8,
        },
        Draw::Late => Op::Late {
            ms: rng.range(1, 200),
        },
        Draw::Fire => Op::Fire,
        Draw::Local => {
            let (res, key) = place(rng);
            Op::Local {
                res,
                key,
                wait: if rng.chance(100) {
                    Some(0)
                } else {
                    wait(rng, mix)
                },
                max: rng.range(1, 8) as u8,
            }
        }
        Draw::LocalRelease => Op::LocalRelease { pick: pick(rng) },
        Draw::Forget => Op::Forget {
            res: rng.below(mix.resources.len() as u64) as u8,
        },
        draw @ (Draw::Claim | Draw::ClaimId) => {
            let pool = rng.below(mix.pools.len() as u64) as u8;
            // Now and then one more than the capacity: refused `invalid`.
            let n = rng.range(1, (mix.pools[pool as usize].capacity + 1).min(255)) as u8;
            let n = if rng.chance(700) { n.min(2) } else { n };
            Op::Claim {
                pool,
                n,
                id: (draw == Draw::ClaimId).then(|| rng.below(u64::from(mix.claim_ids)) as u8),
                wait: if rng.chance(300) {
                    Some(0)
                } else {
                    wait(rng, mix)
                },
                ttl: match rng.weighted(&mix.claim_ttls) {
                    0 => None,
                    1 => Some(rng.range(1, 5_000)),
                    _ => Some(rng.range(5_001, MAX_HOLD_MS)),
                },
            }
        }
        Draw::PoolRelease => Op::PoolRelease { pick: pick(rng) },
        Draw::PoolReleaseId => Op::PoolReleaseId {
            pool: rng.below(mix.pools.len() as u64) as u8,
            id: rng.below(u64::from(mix.claim_ids)) as u8,
        },
        Draw::Confirm => Op::Confirm { pick: pick(rng) },
        Draw::PoolCancel => Op::PoolCancel { pick: pick(rng) },
        Draw::Resize => {
            let pool = rng.below(mix.pools.len() as u64) as u8;
            let capacity = mix.pools[pool as usize].capacity;
            Op::Resize {
                pool,
                capacity: rng.range(capacity.saturating_sub(4).max(1), capacity + 4) as u8,
            }
        }
        Draw::PoolWriteOk => Op::PoolWrite(Outcome::Ok),
        Draw::PoolWriteFail => Op::PoolWrite(if rng.chance(500) {
            Outcome::FailLanded
        } else {
            Outcome::FailLost
        }),
    }
}
