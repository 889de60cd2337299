//! The messages of protocol version 1 and their bounds.
//!
//! Revision 2 of version 1 added paged inspection (`InspectPage`, `InspectedPage`): new message types,
//! none changed, so the version byte stays 1. A client asks for pages only after a server answered a
//! whole `Inspect` with a `limit` error (which a revision 1 server never does), so that either side may
//! be older than the other (see `docs/protocol.md`).
//!
//! Revision 3 adds a `hello` and a `welcome` that carry the revision (new types: the old ones stay
//! for older peers) and, between peers that both said revision 3, batches: several frames in one
//! WebSocket message (`decode_client_batch`, `encode_batch`). A server older than revision 3 refuses
//! the new `hello` as an unknown type (`protocol`), and the client says the old `hello` instead; a
//! client older than revision 3 says the old one, is answered the old `welcome`, and is never sent a
//! batch.
//!
//! Revision 4 adds pools (#16): `Claim`, `Pool` (see [`PoolOp`]), `InspectPools`, and their answers
//! `Claimed`, `Count`, `Pools`. A client sends a pool frame only when the `welcome` said revision
//! [`POOLS`] or later (the lower of the two sides' revisions), so that an older server never sees
//! one (it would refuse it as an unknown type, `protocol`) and the client refuses pools there with a
//! clear error instead; a server answers pool frames only to a client that said [`POOLS`], so an
//! older client is never sent a type it does not know.
//!
//! Revision 5 adds `Ping`, answered `Done`: a client that waits for an answer and hears nothing
//! pings, and drops a connection that stays silent (a server stopped, or a connection that died
//! without a close), so that what it waits for is asked again on a new one. A client pings only when
//! the `welcome` said [`HEARTBEAT`] or later; a server answers any client's ping (`Done` is a type
//! every client knows).
//!
//! Revision 6 adds no type: a `pool` `release` is answered `Count` 2 when the claim held nothing
//! but had taken its units and given them back (released, or its ttl ran out; its id remembered),
//! so that a client asking again a release whose answer a dropped connection lost learns that the
//! units are back. Sent only to a client that said [`HANDED_BACK`] or later (an older one is
//! answered 0, as before). And the pool op `Withdraw` ([`PoolOp::Withdraw`]), which a client sends
//! only when the `welcome` said [`HANDED_BACK`] or later.
//!
//! Revision 7 adds no type and no field: a `pool` `withdraw` whose `value` is not 0 names the frame
//! id of the `claim` whose `claimed` answer it takes back (a client's frame ids are never reused
//! across its connections), so that a client withdraws exactly the answers it did not hand to a
//! caller — one lost with a dropped connection included — and a server undoes a claim only once
//! every `claimed` answer told for it was taken back. A client sends a non-zero `value` only when the
//! `welcome` said [`NAMED_ASKS`] or later (an older server would read it as a withdraw of any one
//! answer); a server refuses it from a client that said an older revision. The codec is unchanged.
//!
//! Revision 8 adds paged inspection of pools, as revision 2 did for keys: `InspectPoolsPage` (the
//! pools after the one named, in order of name) answered `PoolsPage`, so that no answer is larger
//! than a server's bound (4 MiB) however many pools a store has. A client sends it only when the
//! `welcome` said [`POOL_PAGES`] or later, and asks with `InspectPools` otherwise; a server refuses
//! it from a client that said an older revision (`protocol`), and answers such a client's
//! `InspectPools` whole, or `error` `limit` when that would not fit in one frame.

/// The protocol version this build speaks; the first byte of every frame.
pub const VERSION: u8 = 1;
/// The revision of version 1 this build speaks (new message types only; see the module docs).
pub const REVISION: u8 = 8;
/// The first revision with batches and with the revision in `hello` and `welcome`.
pub const BATCHES: u8 = 3;
/// The first revision with pools.
pub const POOLS: u8 = 4;
/// The first revision with `Ping`.
pub const HEARTBEAT: u8 = 5;
/// The first revision whose `pool` `release` may be answered `Count` 2 (handed back before).
pub const HANDED_BACK: u8 = 6;
/// The first revision whose `pool` `withdraw` may name, in its `value`, the `claim` frame whose
/// answer it takes back.
pub const NAMED_ASKS: u8 = 7;
/// The first revision with paged inspection of pools (`InspectPoolsPage`, `PoolsPage`).
pub const POOL_PAGES: u8 = 8;
/// The longest claim id, in bytes of UTF-8.
pub const MAX_CLAIM_ID: usize = 128;
/// The revision of a peer that says the old `hello` or `welcome`, which carry none: 2 or older, taken
/// as 2 (what revision 1 lacks, paged inspection, is asked for only after a refusal it never gives).
pub const UNSAID: u8 = 2;
/// Version, type, and the correlation id.
pub const HEADER: usize = 6;
/// The largest frame a server accepts (64 KiB).
pub const MAX_CLIENT_FRAME: usize = 64 * 1024;
/// The largest frame a client accepts (an inspection of many keys is large).
pub const MAX_SERVER_FRAME: usize = 16 * 1024 * 1024;
/// The longest token.
pub const MAX_TOKEN: usize = 1024;
/// The longest name on the wire (the engine checks its pattern).
pub const MAX_NAME_WIRE: usize = 64;
/// The longest key, in bytes of UTF-8.
pub const MAX_KEY: usize = 1024;
/// The longest client name and error message.
pub(crate) const MAX_TEXT: usize = 4096;

/// What a client sends. Strings borrow from the frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// The first frame of a connection: the highest revision the client speaks, the token, and a
    /// free-text name of the client. Revision [`UNSAID`] is the old `hello` (type 0x01), which
    /// carries no revision; [`BATCHES`] and later the new one (type 0x09).
    Hello {
        revision: u8,
        token: &'a str,
        client: &'a str,
    },
    /// Asks for a key. `limit` is a semaphore's (0 for a lock); `max_hold` 0 is none; `wait`
    /// `u64::MAX` is without limit.
    Hold {
        semaphore: bool,
        limit: u32,
        name: &'a str,
        key: &'a str,
        ttl: u32,
        max_hold: u64,
        wait: u64,
        request: u128,
    },
    Renew {
        lease: u128,
    },
    Release {
        lease: u128,
    },
    Cancel {
        request: u128,
    },
    Inspect,
    /// Asks for the next page of an inspection: the busy keys after the one named (in the server's
    /// order of kind, name and key), or from the first when `name` is empty. (Revision 2.)
    InspectPage {
        semaphore: bool,
        name: &'a str,
        key: &'a str,
    },
    /// The client closes cleanly: its leases are released at once.
    Goodbye,
    /// Claims `n` units of `pool` (made with `capacity` if new) as claim `claim`; `wait` `u64::MAX`
    /// is without limit; `ttl` 0 is none. (Revision 4.)
    Claim {
        pool: &'a str,
        capacity: u64,
        n: u64,
        claim: &'a str,
        wait: u64,
        ttl: u64,
    },
    /// Another operation on `pool` (made with `capacity` if new; 0: it must exist): see [`PoolOp`].
    /// `claim` names the claim of a release, confirm or cancel (empty otherwise); `value` is a
    /// resize's new capacity. (Revision 4.)
    Pool {
        op: PoolOp,
        pool: &'a str,
        capacity: u64,
        claim: &'a str,
        value: u64,
    },
    /// Asks for every pool. (Revision 4.)
    InspectPools,
    /// Asks for the next page of an inspection of pools: the pools whose name comes after `after`
    /// (byte order), or from the first when `after` is empty. (Revision 8.)
    InspectPoolsPage {
        after: &'a str,
    },
    /// Asks for an answer (`Done`) and nothing else: is the server there? (Revision 5.)
    Ping,
}

/// The operations of `ClientMessage::Pool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PoolOp {
    /// Gives back the units of `claim`: answered `Count` 1 (released) or 0 (it held nothing).
    Release = 1,
    /// Keeps the units of `claim` (a ttl claim) until released: answered `Done`, or `error` `lost`.
    Confirm = 2,
    /// Answered `Count`: the units left.
    Remaining = 3,
    /// Sets the capacity to `value`: answered `Done`.
    Resize = 4,
    /// Ends the waiting claim `claim` of this connection: answered `Done`; the claim, `error`
    /// `cancelled`.
    Cancel = 5,
    /// (Revision 6.) Undoes the open claim `claim`, whose `claimed` answer came after its asker
    /// had given it up (its cancel crossed the answer): its units come back and its id is forgotten,
    /// as a claim cancelled before its answer is. Answered `Count` 1 (undone) or 0 (not undone: no
    /// open claim, or the server answered it `claimed` to another asker too, who holds it).
    /// (Revision 7.) A `value` other than 0 is the frame id of the client's `claim` whose answer it
    /// takes back: 0 too when the server sent that frame no `claimed` answer.
    Withdraw = 6,
}

impl PoolOp {
    pub fn from_u8(op: u8) -> Option<PoolOp> {
        Some(match op {
            1 => PoolOp::Release,
            2 => PoolOp::Confirm,
            3 => PoolOp::Remaining,
            4 => PoolOp::Resize,
            5 => PoolOp::Cancel,
            6 => PoolOp::Withdraw,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PoolOp::Release => "release",
            PoolOp::Confirm => "confirm",
            PoolOp::Remaining => "remaining",
            PoolOp::Resize => "resize",
            PoolOp::Cancel => "cancel",
            PoolOp::Withdraw => "withdraw",
        }
    }
}

/// One pool in an inspection of pools. (Revision 4.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolEntry {
    pub name: String,
    pub capacity: u64,
    pub remaining: u64,
    /// Open claims.
    pub claims: u32,
    pub waiting: u32,
}

/// The stable error codes, as on the JavaScript errors (plus `permission` and `protocol`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ErrorCode {
    InUse = 1,
    Lost = 2,
    Closed = 3,
    Invalid = 4,
    Limit = 5,
    Cancelled = 6,
    Storage = 7,
    Permission = 8,
    Protocol = 9,
}

impl ErrorCode {
    pub fn from_u8(code: u8) -> Option<ErrorCode> {
        Some(match code {
            1 => ErrorCode::InUse,
            2 => ErrorCode::Lost,
            3 => ErrorCode::Closed,
            4 => ErrorCode::Invalid,
            5 => ErrorCode::Limit,
            6 => ErrorCode::Cancelled,
            7 => ErrorCode::Storage,
            8 => ErrorCode::Permission,
            9 => ErrorCode::Protocol,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InUse => "in_use",
            ErrorCode::Lost => "lost",
            ErrorCode::Closed => "closed",
            ErrorCode::Invalid => "invalid",
            ErrorCode::Limit => "limit",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Storage => "storage",
            ErrorCode::Permission => "permission",
            ErrorCode::Protocol => "protocol",
        }
    }

    pub fn parse(code: &str) -> Option<ErrorCode> {
        (1..=9)
            .filter_map(ErrorCode::from_u8)
            .find(|c| c.as_str() == code)
    }
}

/// One busy key in an inspection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InspectEntry {
    pub semaphore: bool,
    pub name: String,
    pub key: String,
    /// `(fence, held_ms)` of each holder.
    pub holders: Vec<(u64, u64)>,
    pub waiting: u32,
}

/// What a server sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerMessage {
    /// The answer to `Hello`: the revision of the conversation (the lower of the two sides'), in the
    /// new `welcome` (type 0x8a) when it is [`BATCHES`] or later, else the old one (0x81), which
    /// carries none and answers the old `hello`.
    Welcome {
        revision: u8,
        max_frame: u32,
        connection_limit: u32,
    },
    /// A hold is granted. `revoke_in` 0 is no maxHold.
    Granted {
        request: u128,
        lease: u128,
        fence: u64,
        ttl: u32,
        revoke_in: u64,
    },
    /// A hold that would not wait found the key held.
    Busy,
    /// A renewal went through: the lease lasts `ttl` ms from now.
    Renewed { ttl: u32, revoke_in: u64 },
    /// A release or a cancel went through.
    Done,
    /// A request failed; for a hold, its wait ended.
    Error { code: ErrorCode, message: String },
    /// The busy keys.
    Inspected { entries: Vec<InspectEntry> },
    /// A page of the busy keys, in the server's order; `more`: there are keys after its last one.
    /// (Revision 2.)
    InspectedPage {
        more: bool,
        entries: Vec<InspectEntry>,
    },
    /// Unsolicited: a lease was lost (revoked at maxHold, past its ttl, or the store closed).
    Lost { lease: u128, code: ErrorCode },
    /// The answer to a `Claim`: whether it took its units, and what was left. (Revision 4.)
    Claimed { claimed: bool, remaining: u64 },
    /// The answer to a `Pool` release (1 or 0) or remaining (the units left). (Revision 4.)
    Count { value: u64 },
    /// The pools. (Revision 4.)
    Pools { entries: Vec<PoolEntry> },
    /// A page of the pools, in order of name; `more`: there are pools after its last one.
    /// (Revision 8.)
    PoolsPage { more: bool, entries: Vec<PoolEntry> },
}
