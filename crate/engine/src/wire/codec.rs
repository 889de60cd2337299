//! Encoding and decoding of frames. All integers are little-endian; a string is a `u16` byte length
//! and that many bytes of UTF-8; an id is 16 raw bytes.

use std::fmt;

use super::message::*;

/// Why a frame was refused. Its text names the field and the bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad frame: {}", self.0)
    }
}

impl std::error::Error for WireError {}

fn bad(message: impl Into<String>) -> WireError {
    WireError(message.into())
}

/// Reads a frame front to back; every read checks what is left first.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], WireError> {
        let left = self.bytes.len() - self.at;
        if n > left {
            return Err(bad(format!("{what}: needs {n} bytes, {left} left")));
        }
        let slice = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(slice)
    }

    fn u8(&mut self, what: &str) -> Result<u8, WireError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2 bytes"),
        ))
    }

    fn u32(&mut self, what: &str) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self, what: &str) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8 bytes"),
        ))
    }

    fn id(&mut self, what: &str) -> Result<u128, WireError> {
        Ok(u128::from_le_bytes(
            self.take(16, what)?.try_into().expect("16 bytes"),
        ))
    }

    fn bool(&mut self, what: &str) -> Result<bool, WireError> {
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(bad(format!("{what}: {other} is neither 0 nor 1"))),
        }
    }

    /// A string of at most `max` bytes: the bound is checked before the bytes are looked at.
    fn str(&mut self, what: &str, max: usize) -> Result<&'a str, WireError> {
        let len = self.u16(what)? as usize;
        if len > max {
            return Err(bad(format!("{what}: {len} bytes, at most {max}")));
        }
        std::str::from_utf8(self.take(len, what)?).map_err(|_| bad(format!("{what}: not UTF-8")))
    }

    /// A count of items, each at least `min_size` bytes: refused when the frame cannot hold them,
    /// so that a forged count never makes the decoder allocate.
    fn count(&mut self, what: &str, min_size: usize) -> Result<usize, WireError> {
        let n = self.u32(what)? as usize;
        let left = self.bytes.len() - self.at;
        if n.saturating_mul(min_size) > left {
            return Err(bad(format!("{what}: {n} items cannot fit in {left} bytes")));
        }
        Ok(n)
    }

    fn end(&self) -> Result<(), WireError> {
        match self.bytes.len() - self.at {
            0 => Ok(()),
            extra => Err(bad(format!("{extra} bytes after the message"))),
        }
    }
}

/// Checks the size, the version, and reads the header: `(type, id, reader of the body)`.
fn open(bytes: &[u8], max: usize) -> Result<(u8, u32, Reader<'_>), WireError> {
    if bytes.len() > max {
        return Err(bad(format!("{} bytes, at most {max}", bytes.len())));
    }
    let mut r = Reader { bytes, at: 0 };
    let version = r.u8("version")?;
    if version != VERSION {
        return Err(bad(format!(
            "version {version}, this side speaks {VERSION}"
        )));
    }
    let kind = r.u8("type")?;
    let id = r.u32("id")?;
    Ok((kind, id, r))
}

const HELLO: u8 = 0x01;
const HOLD: u8 = 0x02;
const RENEW: u8 = 0x03;
const RELEASE: u8 = 0x04;
const CANCEL: u8 = 0x05;
const INSPECT: u8 = 0x06;
const GOODBYE: u8 = 0x07;
const INSPECT_PAGE: u8 = 0x08;
const HELLO_REVISED: u8 = 0x09;
const BATCH_CLIENT: u8 = 0x0a;
const CLAIM: u8 = 0x0b;
const POOL: u8 = 0x0c;
const INSPECT_POOLS: u8 = 0x0d;
const PING: u8 = 0x0e;
const INSPECT_POOLS_PAGE: u8 = 0x0f;

const WELCOME: u8 = 0x81;
const GRANTED: u8 = 0x82;
const BUSY: u8 = 0x83;
const RENEWED: u8 = 0x84;
const DONE: u8 = 0x85;
const ERROR: u8 = 0x86;
const INSPECTED: u8 = 0x87;
const LOST: u8 = 0x88;
const INSPECTED_PAGE: u8 = 0x89;
const WELCOME_REVISED: u8 = 0x8a;
const BATCH_SERVER: u8 = 0x8b;
const CLAIMED: u8 = 0x8c;
const COUNT: u8 = 0x8d;
const POOLS_FRAME: u8 = 0x8e;
const POOLS_PAGE: u8 = 0x8f;

/// Decodes a frame a client sent: `(id, message)`.
pub fn decode_client(bytes: &[u8]) -> Result<(u32, ClientMessage<'_>), WireError> {
    let (kind, id, mut r) = open(bytes, MAX_CLIENT_FRAME)?;
    let message = match kind {
        HELLO => ClientMessage::Hello {
            revision: UNSAID,
            token: r.str("token", MAX_TOKEN)?,
            client: r.str("client", MAX_TEXT)?,
        },
        HELLO_REVISED => ClientMessage::Hello {
            revision: revised(&mut r)?,
            token: r.str("token", MAX_TOKEN)?,
            client: r.str("client", MAX_TEXT)?,
        },
        BATCH_CLIENT => return Err(bad("a batch where one frame was expected")),
        HOLD => ClientMessage::Hold {
            semaphore: r.bool("kind")?,
            limit: r.u32("limit")?,
            name: r.str("name", MAX_NAME_WIRE)?,
            key: r.str("key", MAX_KEY)?,
            ttl: r.u32("ttl")?,
            max_hold: r.u64("maxHold")?,
            wait: r.u64("wait")?,
            request: r.id("request")?,
        },
        RENEW => ClientMessage::Renew {
            lease: r.id("lease")?,
        },
        RELEASE => ClientMessage::Release {
            lease: r.id("lease")?,
        },
        CANCEL => ClientMessage::Cancel {
            request: r.id("request")?,
        },
        INSPECT => ClientMessage::Inspect,
        GOODBYE => ClientMessage::Goodbye,
        INSPECT_PAGE => ClientMessage::InspectPage {
            semaphore: r.bool("kind")?,
            name: r.str("name", MAX_NAME_WIRE)?,
            key: r.str("key", MAX_KEY)?,
        },
        CLAIM => ClientMessage::Claim {
            pool: r.str("pool", MAX_NAME_WIRE)?,
            capacity: r.u64("capacity")?,
            n: r.u64("n")?,
            claim: r.str("claim", MAX_CLAIM_ID)?,
            wait: r.u64("wait")?,
            ttl: r.u64("ttl")?,
        },
        POOL => {
            let op = r.u8("op")?;
            ClientMessage::Pool {
                op: PoolOp::from_u8(op).ok_or_else(|| bad(format!("pool op {op}")))?,
                pool: r.str("pool", MAX_NAME_WIRE)?,
                capacity: r.u64("capacity")?,
                claim: r.str("claim", MAX_CLAIM_ID)?,
                value: r.u64("value")?,
            }
        }
        INSPECT_POOLS => ClientMessage::InspectPools,
        PING => ClientMessage::Ping,
        INSPECT_POOLS_PAGE => ClientMessage::InspectPoolsPage {
            after: r.str("after", MAX_NAME_WIRE)?,
        },
        other => return Err(bad(format!("unknown client message type {other:#04x}"))),
    };
    r.end()?;
    Ok((id, message))
}

/// Decodes a frame a server sent: `(id, message)`.
pub fn decode_server(bytes: &[u8]) -> Result<(u32, ServerMessage), WireError> {
    let (kind, id, mut r) = open(bytes, MAX_SERVER_FRAME)?;
    let message = match kind {
        WELCOME => ServerMessage::Welcome {
            revision: UNSAID,
            max_frame: r.u32("maxFrame")?,
            connection_limit: r.u32("connectionLimit")?,
        },
        WELCOME_REVISED => ServerMessage::Welcome {
            revision: revised(&mut r)?,
            max_frame: r.u32("maxFrame")?,
            connection_limit: r.u32("connectionLimit")?,
        },
        BATCH_SERVER => return Err(bad("a batch where one frame was expected")),
        GRANTED => ServerMessage::Granted {
            request: r.id("request")?,
            lease: r.id("lease")?,
            fence: r.u64("fence")?,
            ttl: r.u32("ttl")?,
            revoke_in: r.u64("revokeIn")?,
        },
        BUSY => ServerMessage::Busy,
        RENEWED => ServerMessage::Renewed {
            ttl: r.u32("ttl")?,
            revoke_in: r.u64("revokeIn")?,
        },
        DONE => ServerMessage::Done,
        ERROR => {
            let code = r.u8("code")?;
            ServerMessage::Error {
                code: ErrorCode::from_u8(code).ok_or_else(|| bad(format!("error code {code}")))?,
                message: r.str("message", MAX_TEXT)?.to_owned(),
            }
        }
        INSPECTED => ServerMessage::Inspected {
            entries: read_entries(&mut r)?,
        },
        INSPECTED_PAGE => ServerMessage::InspectedPage {
            more: r.bool("more")?,
            entries: read_entries(&mut r)?,
        },
        LOST => {
            let lease = r.id("lease")?;
            let code = r.u8("code")?;
            ServerMessage::Lost {
                lease,
                code: ErrorCode::from_u8(code).ok_or_else(|| bad(format!("error code {code}")))?,
            }
        }
        CLAIMED => ServerMessage::Claimed {
            claimed: r.bool("claimed")?,
            remaining: r.u64("remaining")?,
        },
        COUNT => ServerMessage::Count {
            value: r.u64("value")?,
        },
        POOLS_FRAME => ServerMessage::Pools {
            entries: read_pools(&mut r)?,
        },
        POOLS_PAGE => ServerMessage::PoolsPage {
            more: r.bool("more")?,
            entries: read_pools(&mut r)?,
        },
        other => return Err(bad(format!("unknown server message type {other:#04x}"))),
    };
    r.end()?;
    Ok((id, message))
}

/// The revision said in a revised `hello` or `welcome`: [`BATCHES`] or later (an older one says the
/// old message, which carries none).
fn revised(r: &mut Reader<'_>) -> Result<u8, WireError> {
    let revision = r.u8("revision")?;
    if revision < BATCHES {
        return Err(bad(format!(
            "revision: {revision} in a message of revision {BATCHES} or later"
        )));
    }
    Ok(revision)
}

/// The frames of a message a client sent (revision 3): the frame itself, or every frame of a batch, in
/// order. The whole message is decoded before anything is answered, so a bad frame anywhere in a
/// batch refuses all of it. A batch has id 0, carries at least one frame, and no `hello` nor batch.
pub fn decode_client_batch(bytes: &[u8]) -> Result<Vec<(u32, ClientMessage<'_>)>, WireError> {
    let opens = |m: &ClientMessage<'_>| matches!(m, ClientMessage::Hello { .. });
    decode_all(
        bytes,
        MAX_CLIENT_FRAME,
        BATCH_CLIENT,
        decode_client,
        opens,
        "a hello",
    )
}

/// The frames of a message a server sent, as [`decode_client_batch`] (no `welcome` in a batch).
pub fn decode_server_batch(bytes: &[u8]) -> Result<Vec<(u32, ServerMessage)>, WireError> {
    let opens = |m: &ServerMessage| matches!(m, ServerMessage::Welcome { .. });
    decode_all(
        bytes,
        MAX_SERVER_FRAME,
        BATCH_SERVER,
        decode_server,
        opens,
        "a welcome",
    )
}

/// A decoder of one side's frames.
type Decode<'a, M> = fn(&'a [u8]) -> Result<(u32, M), WireError>;

/// One side's [`decode_client_batch`]: `decode` each frame; a frame that `opens` a conversation
/// (named `opening`) is refused inside a batch.
fn decode_all<'a, M>(
    bytes: &'a [u8],
    max: usize,
    batch: u8,
    decode: Decode<'a, M>,
    opens: impl Fn(&M) -> bool,
    opening: &str,
) -> Result<Vec<(u32, M)>, WireError> {
    let Some(frames) = batch_of(bytes, max, batch)? else {
        return Ok(vec![decode(bytes)?]);
    };
    let mut messages = Vec::with_capacity(frames.len());
    for frame in frames {
        let (id, message) = decode(frame)?;
        if opens(&message) {
            return Err(bad(format!("{opening} in a batch")));
        }
        messages.push((id, message));
    }
    Ok(messages)
}

/// The frames a batch carries (each after its `u16` length), or `None` when `bytes` is no batch.
fn batch_of(bytes: &[u8], max: usize, batch: u8) -> Result<Option<Vec<&[u8]>>, WireError> {
    let (kind, id, mut r) = open(bytes, max)?;
    if kind != batch {
        return Ok(None);
    }
    if id != 0 {
        return Err(bad(format!("batch: id {id}, a batch has id 0")));
    }
    let mut frames = Vec::new();
    while r.at < r.bytes.len() {
        let len = r.u16("batch: frame length")? as usize;
        frames.push(r.take(len, "batch: frame")?);
    }
    if frames.is_empty() {
        return Err(bad("batch: no frame"));
    }
    Ok(Some(frames))
}

/// A batch (revision 3) of `frames`, which were encoded alone, for the client's side (`server`
/// false) or the server's. Each frame must be at most 65,535 bytes (a larger one is sent alone), and
/// the batch at most what its receiver accepts ([`MAX_CLIENT_FRAME`], [`MAX_SERVER_FRAME`]).
pub fn encode_batch(server: bool, frames: &[&[u8]]) -> Vec<u8> {
    let mut w = Writer::new(if server { BATCH_SERVER } else { BATCH_CLIENT }, 0);
    for frame in frames {
        assert!(
            frame.len() <= u16::MAX as usize,
            "a frame of {} bytes in a batch",
            frame.len()
        );
        w.0.extend_from_slice(&(frame.len() as u16).to_le_bytes());
        w.0.extend_from_slice(frame);
    }
    w.0
}

/// The busy keys of an inspection (or of one page of it).
fn read_entries(r: &mut Reader<'_>) -> Result<Vec<InspectEntry>, WireError> {
    // Each entry is at least kind + two strings + two counts.
    let n = r.count("entries", 1 + 2 + 2 + 4 + 4)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let semaphore = r.bool("kind")?;
        let name = r.str("name", MAX_NAME_WIRE)?.to_owned();
        let key = r.str("key", MAX_KEY)?.to_owned();
        let h = r.count("holders", 16)?;
        let mut holders = Vec::with_capacity(h);
        for _ in 0..h {
            holders.push((r.u64("fence")?, r.u64("heldMs")?));
        }
        let waiting = r.u32("waiting")?;
        entries.push(InspectEntry {
            semaphore,
            name,
            key,
            holders,
            waiting,
        });
    }
    Ok(entries)
}

/// The pools of an inspection of pools (or of one page of it).
fn read_pools(r: &mut Reader<'_>) -> Result<Vec<PoolEntry>, WireError> {
    // Each entry is at least a string and two u64s and two u32s.
    let n = r.count("pools", 2 + 8 + 8 + 4 + 4)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        entries.push(PoolEntry {
            name: r.str("name", MAX_NAME_WIRE)?.to_owned(),
            capacity: r.u64("capacity")?,
            remaining: r.u64("remaining")?,
            claims: r.u32("claims")?,
            waiting: r.u32("waiting")?,
        });
    }
    Ok(entries)
}

/// Builds a frame.
struct Writer(Vec<u8>);

impl Writer {
    fn new(kind: u8, id: u32) -> Writer {
        let mut w = Writer(Vec::with_capacity(64));
        w.0.push(VERSION);
        w.0.push(kind);
        w.0.extend_from_slice(&id.to_le_bytes());
        w
    }
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn id(&mut self, v: u128) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn entries(&mut self, entries: &[InspectEntry]) -> &mut Self {
        self.u32(entries.len() as u32);
        for e in entries {
            self.u8(e.semaphore as u8)
                .str(&e.name)
                .str(&e.key)
                .u32(e.holders.len() as u32);
            for &(fence, held) in &e.holders {
                self.u64(fence).u64(held);
            }
            self.u32(e.waiting);
        }
        self
    }
    fn pools(&mut self, entries: &[PoolEntry]) -> &mut Self {
        self.u32(entries.len() as u32);
        for e in entries {
            self.str(&e.name)
                .u64(e.capacity)
                .u64(e.remaining)
                .u32(e.claims)
                .u32(e.waiting);
        }
        self
    }
    /// Writes a string, cut at a character boundary to fit a `u16` length (longer is never valid).
    fn str(&mut self, s: &str) -> &mut Self {
        let mut end = s.len().min(u16::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.0.extend_from_slice(&(end as u16).to_le_bytes());
        self.0.extend_from_slice(&s.as_bytes()[..end]);
        self
    }
}

/// Encodes a client's message.
pub fn encode_client(id: u32, message: &ClientMessage<'_>) -> Vec<u8> {
    let w = match *message {
        ClientMessage::Hello {
            revision,
            token,
            client,
        } => {
            if revision >= BATCHES {
                let mut w = Writer::new(HELLO_REVISED, id);
                w.u8(revision).str(token).str(client);
                w
            } else {
                let mut w = Writer::new(HELLO, id);
                w.str(token).str(client);
                w
            }
        }
        ClientMessage::Hold {
            semaphore,
            limit,
            name,
            key,
            ttl,
            max_hold,
            wait,
            request,
        } => {
            let mut w = Writer::new(HOLD, id);
            w.u8(semaphore as u8)
                .u32(limit)
                .str(name)
                .str(key)
                .u32(ttl)
                .u64(max_hold)
                .u64(wait)
                .id(request);
            w
        }
        ClientMessage::Renew { lease } => {
            let mut w = Writer::new(RENEW, id);
            w.id(lease);
            w
        }
        ClientMessage::Release { lease } => {
            let mut w = Writer::new(RELEASE, id);
            w.id(lease);
            w
        }
        ClientMessage::Cancel { request } => {
            let mut w = Writer::new(CANCEL, id);
            w.id(request);
            w
        }
        ClientMessage::Inspect => Writer::new(INSPECT, id),
        ClientMessage::Goodbye => Writer::new(GOODBYE, id),
        ClientMessage::InspectPage {
            semaphore,
            name,
            key,
        } => {
            let mut w = Writer::new(INSPECT_PAGE, id);
            w.u8(semaphore as u8).str(name).str(key);
            w
        }
        ClientMessage::Claim {
            pool,
            capacity,
            n,
            claim,
            wait,
            ttl,
        } => {
            let mut w = Writer::new(CLAIM, id);
            w.str(pool)
                .u64(capacity)
                .u64(n)
                .str(claim)
                .u64(wait)
                .u64(ttl);
            w
        }
        ClientMessage::Pool {
            op,
            pool,
            capacity,
            claim,
            value,
        } => {
            let mut w = Writer::new(POOL, id);
            w.u8(op as u8).str(pool).u64(capacity).str(claim).u64(value);
            w
        }
        ClientMessage::InspectPools => Writer::new(INSPECT_POOLS, id),
        ClientMessage::Ping => Writer::new(PING, id),
        ClientMessage::InspectPoolsPage { after } => {
            let mut w = Writer::new(INSPECT_POOLS_PAGE, id);
            w.str(after);
            w
        }
    };
    w.0
}

/// Encodes a server's message.
pub fn encode_server(id: u32, message: &ServerMessage) -> Vec<u8> {
    let w = match message {
        ServerMessage::Welcome {
            revision,
            max_frame,
            connection_limit,
        } => {
            if *revision >= BATCHES {
                let mut w = Writer::new(WELCOME_REVISED, id);
                w.u8(*revision).u32(*max_frame).u32(*connection_limit);
                w
            } else {
                let mut w = Writer::new(WELCOME, id);
                w.u32(*max_frame).u32(*connection_limit);
                w
            }
        }
        ServerMessage::Granted {
            request,
            lease,
            fence,
            ttl,
            revoke_in,
        } => {
            let mut w = Writer::new(GRANTED, id);
            w.id(*request)
                .id(*lease)
                .u64(*fence)
                .u32(*ttl)
                .u64(*revoke_in);
            w
        }
        ServerMessage::Busy => Writer::new(BUSY, id),
        ServerMessage::Renewed { ttl, revoke_in } => {
            let mut w = Writer::new(RENEWED, id);
            w.u32(*ttl).u64(*revoke_in);
            w
        }
        ServerMessage::Done => Writer::new(DONE, id),
        ServerMessage::Error { code, message } => {
            let mut w = Writer::new(ERROR, id);
            let mut end = message.len().min(MAX_TEXT);
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            w.u8(*code as u8).str(&message[..end]);
            w
        }
        ServerMessage::Inspected { entries } => {
            let mut w = Writer::new(INSPECTED, id);
            w.entries(entries);
            w
        }
        ServerMessage::InspectedPage { more, entries } => {
            let mut w = Writer::new(INSPECTED_PAGE, id);
            w.u8(*more as u8).entries(entries);
            w
        }
        ServerMessage::Lost { lease, code } => {
            let mut w = Writer::new(LOST, id);
            w.id(*lease).u8(*code as u8);
            w
        }
        ServerMessage::Claimed { claimed, remaining } => {
            let mut w = Writer::new(CLAIMED, id);
            w.u8(*claimed as u8).u64(*remaining);
            w
        }
        ServerMessage::Count { value } => {
            let mut w = Writer::new(COUNT, id);
            w.u64(*value);
            w
        }
        ServerMessage::Pools { entries } => {
            let mut w = Writer::new(POOLS_FRAME, id);
            w.pools(entries);
            w
        }
        ServerMessage::PoolsPage { more, entries } => {
            let mut w = Writer::new(POOLS_PAGE, id);
            w.u8(*more as u8).pools(entries);
            w
        }
    };
    w.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold() -> ClientMessage<'static> {
        ClientMessage::Hold {
            semaphore: true,
            limit: 3,
            name: "uploads",
            key: "user-42",
            ttl: 30_000,
            max_hold: 0,
            wait: u64::MAX,
            request: 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
        }
    }

    #[test]
    fn every_message_round_trips() {
        let clients = [
            ClientMessage::Hello {
                revision: UNSAID,
                token: "secret",
                client: "holdfast-js",
            },
            ClientMessage::Hello {
                revision: REVISION,
                token: "secret",
                client: "holdfast-js",
            },
            hold(),
            ClientMessage::Renew { lease: u128::MAX },
            ClientMessage::Release { lease: 7 },
            ClientMessage::Cancel { request: 9 },
            ClientMessage::Inspect,
            ClientMessage::Goodbye,
            ClientMessage::InspectPage {
                semaphore: false,
                name: "",
                key: "",
            },
            ClientMessage::InspectPage {
                semaphore: true,
                name: "uploads",
                key: "user-42 🔒",
            },
            ClientMessage::Claim {
                pool: "seats",
                capacity: (1 << 53) - 1,
                n: 2,
                claim: "order-7 🎟",
                wait: u64::MAX,
                ttl: 0,
            },
            ClientMessage::Pool {
                op: PoolOp::Resize,
                pool: "seats",
                capacity: 180,
                claim: "",
                value: 200,
            },
            ClientMessage::Pool {
                op: PoolOp::Cancel,
                pool: "seats",
                capacity: 180,
                claim: "order-7",
                value: 0,
            },
            ClientMessage::InspectPools,
            ClientMessage::Ping,
            ClientMessage::InspectPoolsPage { after: "" },
            ClientMessage::InspectPoolsPage { after: "seats" },
        ];
        for (i, m) in clients.iter().enumerate() {
            let bytes = encode_client(i as u32, m);
            assert_eq!(decode_client(&bytes), Ok((i as u32, m.clone())));
        }
        let servers = [
            ServerMessage::Welcome {
                revision: UNSAID,
                max_frame: 65_536,
                connection_limit: 10_000,
            },
            ServerMessage::Welcome {
                revision: REVISION,
                max_frame: 65_536,
                connection_limit: 0,
            },
            ServerMessage::Granted {
                request: 1,
                lease: 2,
                fence: (1 << 53) - 1,
                ttl: 30_000,
                revoke_in: 5,
            },
            ServerMessage::Busy,
            ServerMessage::Renewed {
                ttl: 1_000,
                revoke_in: 0,
            },
            ServerMessage::Done,
            ServerMessage::Error {
                code: ErrorCode::Permission,
                message: "token refused".into(),
            },
            ServerMessage::Inspected {
                entries: vec![InspectEntry {
                    semaphore: false,
                    name: "jobs".into(),
                    key: "nightly".into(),
                    holders: vec![(4, 250)],
                    waiting: 2,
                }],
            },
            ServerMessage::Lost {
                lease: 3,
                code: ErrorCode::Lost,
            },
            ServerMessage::InspectedPage {
                more: true,
                entries: vec![InspectEntry {
                    semaphore: true,
                    name: "uploads".into(),
                    key: "user-42".into(),
                    holders: vec![(5, 10), (6, 0)],
                    waiting: 0,
                }],
            },
            ServerMessage::InspectedPage {
                more: false,
                entries: vec![],
            },
            ServerMessage::Claimed {
                claimed: true,
                remaining: 178,
            },
            ServerMessage::Count { value: 3 },
            ServerMessage::Pools {
                entries: vec![PoolEntry {
                    name: "seats".into(),
                    capacity: 180,
                    remaining: 2,
                    claims: 90,
                    waiting: 1,
                }],
            },
            ServerMessage::PoolsPage {
                more: true,
                entries: vec![PoolEntry {
                    name: "licences".into(),
                    capacity: (1 << 53) - 1,
                    remaining: 0,
                    claims: 7,
                    waiting: 0,
                }],
            },
            ServerMessage::PoolsPage {
                more: false,
                entries: vec![],
            },
        ];
        for (i, m) in servers.iter().enumerate() {
            let bytes = encode_server(i as u32, m);
            assert_eq!(decode_server(&bytes), Ok((i as u32, m.clone())));
        }
    }

    #[test]
    fn revision_3_batches_carry_frames_in_order_and_refuse_what_is_not_one() {
        let release = ClientMessage::Release { lease: 7 };
        let frames = [encode_client(0, &release), encode_client(1, &hold())];
        let parts: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let batch = encode_batch(false, &parts);
        assert_eq!(
            decode_client_batch(&batch),
            Ok(vec![(0, release.clone()), (1, hold())])
        );
        // A lone frame is a batch of itself; a batch is not a lone frame.
        assert_eq!(decode_client_batch(&frames[1]), Ok(vec![(1, hold())]));
        assert!(decode_client(&batch)
            .unwrap_err()
            .0
            .contains("batch where one frame"));
        // The server's side the same way, and neither side takes the other's batch.
        let grant = encode_server(1, &ServerMessage::Done);
        let server = encode_batch(true, &[&grant, &grant]);
        assert_eq!(decode_server_batch(&server).unwrap().len(), 2);
        assert!(decode_client_batch(&server).is_err());
        assert!(decode_server_batch(&batch).is_err());
        // No hello, welcome or batch inside; no empty batch; id 0; every length checked.
        let hello = encode_client(
            1,
            &ClientMessage::Hello {
                revision: REVISION,
                token: "t",
                client: "c",
            },
        );
        assert!(decode_client_batch(&encode_batch(false, &[&hello]))
            .unwrap_err()
            .0
            .contains("hello in a batch"));
        let welcome = encode_server(
            1,
            &ServerMessage::Welcome {
                revision: REVISION,
                max_frame: 1,
                connection_limit: 0,
            },
        );
        assert!(decode_server_batch(&encode_batch(true, &[&welcome]))
            .unwrap_err()
            .0
            .contains("welcome in a batch"));
        assert!(decode_client_batch(&encode_batch(false, &[&batch]))
            .unwrap_err()
            .0
            .contains("batch where one frame"));
        assert!(decode_client_batch(&encode_batch(false, &[]))
            .unwrap_err()
            .0
            .contains("no frame"));
        let mut with_id = batch.clone();
        with_id[2] = 5;
        assert!(decode_client_batch(&with_id)
            .unwrap_err()
            .0
            .contains("id 5"));
        // Cut anywhere but after a whole frame, a batch is refused; cut after one, it carries fewer.
        let first_end = HEADER + 2 + frames[0].len();
        for len in HEADER + 1..batch.len() {
            let decoded = decode_client_batch(&batch[..len]);
            if len == first_end {
                assert_eq!(decoded, Ok(vec![(0, release.clone())]));
            } else {
                assert!(decoded.is_err(), "{len} bytes");
            }
        }
        // A revised hello saying an old revision is refused: the old hello says that.
        let mut old = hello.clone();
        old[HEADER] = UNSAID;
        assert!(decode_client(&old).unwrap_err().0.contains("revision: 2"));
    }

    #[test]
    fn revision_7_a_withdraw_names_the_claim_frame_in_its_value() {
        // Any frame id a client draws (1 to 2^32 - 2) is carried and read back whole, and a
        // withdraw of value 0 (revision 6: names none) is the same frame it always was.
        const { assert!(NAMED_ASKS < REVISION && NAMED_ASKS > HANDED_BACK) };
        for value in [0, 1, 0xffff_fffe] {
            let m = ClientMessage::Pool {
                op: PoolOp::Withdraw,
                pool: "seats",
                capacity: 0,
                claim: "order-1",
                value,
            };
            let bytes = encode_client(9, &m);
            assert_eq!(bytes.len(), HEADER + 1 + 2 + 5 + 8 + 2 + 7 + 8);
            assert_eq!(bytes[bytes.len() - 8..], value.to_le_bytes());
            assert_eq!(decode_client(&bytes), Ok((9, m)));
        }
    }

    #[test]
    fn revision_8_pools_go_page_by_page_after_a_name() {
        const { assert!(POOL_PAGES == REVISION && POOL_PAGES > NAMED_ASKS) };
        // The ask: the name after which the page starts, bounded as a name; empty for the first.
        let ask = encode_client(3, &ClientMessage::InspectPoolsPage { after: "seats" });
        assert_eq!(
            ask,
            [&[VERSION, 0x0f, 3, 0, 0, 0, 5, 0][..], b"seats"].concat()
        );
        let mut w = Writer::new(INSPECT_POOLS_PAGE, 1);
        w.str(&"p".repeat(MAX_NAME_WIRE + 1));
        assert!(decode_client(&w.0)
            .unwrap_err()
            .0
            .contains("after: 65 bytes, at most 64"));
        // The page: `more`, then the pools exactly as a whole `pools` frame lays them out.
        let entries = vec![PoolEntry {
            name: "seats".into(),
            capacity: 180,
            remaining: 2,
            claims: 90,
            waiting: 1,
        }];
        let whole = encode_server(
            4,
            &ServerMessage::Pools {
                entries: entries.clone(),
            },
        );
        let page = encode_server(
            4,
            &ServerMessage::PoolsPage {
                more: true,
                entries,
            },
        );
        assert_eq!(page[1], 0x8f);
        assert_eq!(page[HEADER], 1);
        assert_eq!(page[HEADER + 1..], whole[HEADER..]);
        let mut bad = page.clone();
        bad[HEADER] = 2;
        assert!(decode_server(&bad)
            .unwrap_err()
            .0
            .contains("neither 0 nor 1"));
        let mut w = Writer::new(POOLS_PAGE, 1);
        w.u8(0).u32(u32::MAX);
        assert!(decode_server(&w.0).unwrap_err().0.contains("cannot fit"));
    }

    #[test]
    fn every_truncation_of_a_frame_is_refused() {
        let bytes = encode_client(1, &hold());
        for len in 0..bytes.len() {
            assert!(
                decode_client(&bytes[..len]).is_err(),
                "{len} bytes accepted"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_client(&longer)
            .unwrap_err()
            .0
            .contains("after the message"));
    }

    #[test]
    fn lengths_are_checked_against_their_bounds_before_use() {
        // A key length of 1025 is refused by its bound, though the bytes are there.
        let mut w = Writer::new(HOLD, 1);
        w.u8(0).u32(0).str("jobs");
        w.0.extend_from_slice(&1025u16.to_le_bytes());
        w.0.extend(std::iter::repeat_n(b'k', 1025));
        let err = decode_client(&w.0).unwrap_err();
        assert!(err.0.contains("key: 1025 bytes, at most 1024"), "{err}");
        // An inspection claiming four billion entries in a few bytes allocates nothing.
        let mut w = Writer::new(INSPECTED, 1);
        w.u32(u32::MAX);
        assert!(decode_server(&w.0).unwrap_err().0.contains("cannot fit"));
        // Oversized frames, other versions, unknown types, bad booleans and bad UTF-8.
        assert!(decode_client(&vec![1; MAX_CLIENT_FRAME + 1])
            .unwrap_err()
            .0
            .contains("at most"));
        let mut v2 = encode_client(1, &ClientMessage::Inspect);
        v2[0] = 2;
        assert!(decode_client(&v2).unwrap_err().0.contains("version 2"));
        let mut unknown = encode_client(1, &ClientMessage::Inspect);
        unknown[1] = 0x7f;
        assert!(decode_client(&unknown).unwrap_err().0.contains("unknown"));
        let mut b = encode_client(1, &hold());
        b[HEADER] = 2;
        assert!(decode_client(&b).unwrap_err().0.contains("neither 0 nor 1"));
        let mut w = Writer::new(HELLO, 1);
        w.0.extend_from_slice(&2u16.to_le_bytes());
        w.0.extend_from_slice(&[0xff, 0xfe]);
        w.str("");
        assert!(decode_client(&w.0).unwrap_err().0.contains("UTF-8"));
        // Revision 4: a claim id past 128 bytes, an unknown pool op, a forged count of pools.
        let long = "i".repeat(MAX_CLAIM_ID + 1);
        let mut w = Writer::new(CLAIM, 1);
        w.str("seats").u64(1).u64(1).str(&long).u64(0).u64(0);
        assert!(decode_client(&w.0)
            .unwrap_err()
            .0
            .contains("claim: 129 bytes, at most 128"));
        let mut w = Writer::new(POOL, 1);
        w.u8(9).str("seats").u64(1).str("").u64(0);
        assert!(decode_client(&w.0).unwrap_err().0.contains("pool op 9"));
        let mut w = Writer::new(POOLS_FRAME, 1);
        w.u32(u32::MAX);
        assert!(decode_server(&w.0).unwrap_err().0.contains("cannot fit"));
    }
}
