//! Requests over a connection (LOCK-05), as the server host makes them: clients that ask, ask again
//! with the same request id (on another connection, after a drop), renew, release and cancel by
//! their ids, and connections that drop or say goodbye.

use holdfast_engine::{Engine, Hold, Remote, Renewal};

use super::words::{code, opt};
use super::{overdue, Host};
use crate::marks::Mark;
use crate::model::{State, Target};
use crate::op::Op;

/// How many clients over a connection the host remembers.
const CLIENTS_KEPT: usize = 32;

/// A client in another process, as the host knows it: the request id it chose, the lease id the host
/// drew for it, and what it asked for (which it asks again with the same request id). Clients outlive
/// a crash of the store's process: they ask the new one again.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    pub request: u128,
    pub lease: u128,
    pub res: usize,
    pub key: usize,
    pub wait: Option<u64>,
    pub max_hold: Option<u64>,
    pub ttl: u64,
}

impl Host {
    /// `Op::Remote`, `Op::AskAgain`, `Op::Renew`, `Op::ReleaseLease`, `Op::CancelRequest`, `Op::Drop` and `Op::Goodbye`.
    pub(super) fn step_remote(
        &mut self,
        engine: &mut Engine,
        op: Op,
        now: u64,
    ) -> Result<(), String> {
        match op {
            Op::Remote {
                res,
                key,
                conn,
                wait,
                max_hold,
                ttl,
            } => {
                let (r, k) = self.place(res, key);
                self.adopt_if_local(engine, r, k)?;
                let client = Client {
                    request: self.draw_id(),
                    lease: self.draw_id(),
                    res: r,
                    key: k,
                    wait,
                    max_hold,
                    ttl,
                };
                let conn = u32::from(conn % self.mix.conns);
                self.remember(client);
                self.ask_remote(engine, client, conn)?;
            }
            Op::AskAgain { pick, conn } => {
                let Some(mut client) = self.client(pick) else {
                    return Ok(());
                };
                let conn = u32::from(conn % self.mix.conns);
                let m = self.model.as_ref().unwrap();
                match m.by_request(client.request) {
                    Some(req) => {
                        let away = match m.reqs[&req].state {
                            State::Waiting { away, .. } => away,
                            State::Holding { .. } => None,
                        };
                        let overdue = self.overdue_holder(req, true);
                        let got = self.ask_remote(engine, client, conn)?;
                        if away.is_some() && matches!(got, Some(Hold::Resumed { .. })) {
                            self.marks.hit(Mark::AwayBackInPlace);
                            if away.is_some_and(|at| at <= now) {
                                self.overdue(
                                    overdue::RESUME,
                                    "ask again",
                                    format!("a waiter away past its ttl came back at {now} by asking again with its request id (it was to be ended then)"),
                                )?;
                            }
                        }
                        match got {
                            Some(Hold::Resumed { fence: Some(_), .. }) => {
                                self.marks.hit(Mark::AskAgainResumesLease);
                                if overdue {
                                    self.overdue(
                                        overdue::RESUME,
                                        "ask again",
                                        format!("a lease at or past its ttl or maxHold was renewed at {now} by asking again with its request id (renew() refuses it; the answer is {got:?})"),
                                    )?;
                                }
                            }
                            Some(Hold::Resumed { fence: None, .. }) => {
                                self.marks.hit(Mark::AskAgainKeepsPlace)
                            }
                            _ => {}
                        }
                    }
                    None => {
                        // Its request ended: a new one, with a new lease id.
                        self.adopt_if_local(engine, client.res, client.key)?;
                        client.lease = self.draw_id();
                        let at = pick as usize % self.clients.len();
                        self.clients[at] = client;
                        if matches!(
                            self.ask_remote(engine, client, conn)?,
                            Some(Hold::Granted { .. } | Hold::Queued { .. })
                        ) {
                            self.marks.hit(Mark::AskedAfresh);
                        }
                    }
                }
            }
            Op::Renew { pick } => {
                let Some(client) = self.client(pick) else {
                    return Ok(());
                };
                let live = self.model.as_ref().unwrap().by_lease(client.lease);
                let got = engine.renew(client.lease, now);
                self.trace.words(&match got {
                    Ok(Renewal::Renewed { ttl, revoke_in }) => [1, ttl, opt(revoke_in)],
                    Ok(Renewal::Lost) => [2, 0, 0],
                    Err(ref e) => [3, code(e), 0],
                });
                self.log(|| format!("renew {:x} -> {got:?}", client.lease));
                self.model()
                    .renew(client.lease, now, &got)
                    .map_err(|e| format!("renew: {e}"))?;
                match got {
                    Ok(Renewal::Renewed { .. }) => self.marks.hit(Mark::LeaseRenewed),
                    Ok(Renewal::Lost) if live.is_none() => self.marks.hit(Mark::RenewOfLostLease),
                    _ => {}
                }
                self.after_call(engine, "renew")?;
            }
            Op::ReleaseLease { pick } => {
                let Some(client) = self.client(pick) else {
                    return Ok(());
                };
                let req = self.model.as_ref().unwrap().by_lease(client.lease);
                let overdue = req.is_some_and(|r| self.overdue_holder(r, false));
                if let Some(req) = req {
                    self.expiry_mark(req);
                }
                let got = engine.release_lease(client.lease, now);
                self.trace.words(&[
                    match got {
                        Ok(b) => b.into(),
                        Err(ref e) => 2 + code(e),
                    },
                    client.lease as u64,
                ]);
                self.log(|| format!("release_lease {:x} -> {got:?}", client.lease));
                self.model()
                    .release_lease(client.lease, now, &got)
                    .map_err(|e| format!("release by lease id: {e}"))?;
                if overdue && got == Ok(true) {
                    self.overdue(
                        overdue::RELEASE,
                        "release by lease id",
                        format!("a lease past its ttl or maxHold was released as held at {now}"),
                    )?;
                }
                self.after_call(engine, "release by lease id")?;
            }
            Op::CancelRequest { pick } => {
                let Some(client) = self.client(pick) else {
                    return Ok(());
                };
                let got = engine.cancel_request(client.request, now);
                self.cancelled(&got, client.request as u64);
                self.model()
                    .cancel_request(client.request, now, &got)
                    .map_err(|e| format!("cancel by request id: {e}"))?;
                self.after_call(engine, "cancel by request id")?;
            }
            Op::Drop { conn } | Op::Goodbye { conn } => {
                let goodbye = matches!(op, Op::Goodbye { .. });
                let conn = u32::from(conn % self.mix.conns);
                let m = self.model.as_ref().unwrap();
                let leases = m
                    .order
                    .iter()
                    .any(|&r| m.holds(r) && m.reqs[&r].remote.is_some_and(|x| x.conn == conn));
                let got = if goodbye {
                    engine.goodbye(conn, now)
                } else {
                    engine.connection_closed(conn, now)
                };
                self.trace.word(u64::from(goodbye) << 32 | u64::from(conn));
                self.trace
                    .words(&got.iter().map(|id| id.to_u64()).collect::<Vec<_>>());
                self.log(|| format!("end of connection {conn} -> {got:?}"));
                let checked = if goodbye {
                    self.model().goodbye(conn, now, &got)
                } else {
                    self.model().drop_connection(conn, now, &got)
                };
                checked?;
                match (goodbye, leases) {
                    (true, true) => self.marks.hit(Mark::GoodbyeHandsKeyOn),
                    (false, true) => self.marks.hit(Mark::DropKeepsLease),
                    _ => {}
                }
                if !goodbye && !got.is_empty() {
                    self.marks.hit(Mark::DropPutsWaitersAway);
                }
                self.after_call(engine, "end of connection")?;
            }
            _ => unreachable!("{op} is not a connection's"),
        }
        Ok(())
    }

    /// The `pick`-th remembered client.
    fn client(&self, pick: u16) -> Option<Client> {
        (!self.clients.is_empty()).then(|| self.clients[pick as usize % self.clients.len()])
    }

    fn remember(&mut self, client: Client) {
        if self.clients.len() == CLIENTS_KEPT {
            self.clients.pop_front();
        }
        self.clients.push_back(client);
    }

    pub(super) fn draw_id(&mut self) -> u128 {
        self.next_id += 1;
        self.next_id
    }

    /// A client asks on connection `conn`, with its request id.
    fn ask_remote(
        &mut self,
        engine: &mut Engine,
        client: Client,
        conn: u32,
    ) -> Result<Option<Hold>, String> {
        let m = self.model.as_ref().unwrap();
        let t = Target {
            res: Some(client.res),
            key: client.key,
            arg: m.key(client.res, client.key).map(|k| k.id),
        };
        let full = !m.closed && m.on_connection(conn) >= m.connection_limit;
        let remote = Remote {
            conn,
            request: client.request,
            lease: client.lease,
            ttl: client.ttl,
        };
        let got = self.hold(engine, t, client.wait, client.max_hold, false, Some(remote))?;
        if full && got.is_none() {
            self.marks.hit(Mark::ConnectionLimit);
        }
        Ok(got)
    }
}
