/**
 * A server's certificate and key (`serve({ tls: { cert, key } })`), read before it listens, so that a
 * pair that cannot serve is an `InvalidError` naming `tls.cert` or `tls.key`, the same on every
 * runtime, and nothing listens (and a client's `ca`, `checkCa`, before it dials). Left to the
 * runtimes, Node and Bun refused it with their own errors (`ERR_OSSL_…`, unnamed), Node took an empty
 * certificate, and Deno (`node:https` under its Node APIs) took any: it listened, and failed every
 * handshake.
 *
 * Read with `node:crypto`, which Node, Bun and Deno all have: the certificate (the first of a chain)
 * as an X.509 certificate, the key as a private key, and the key as the certificate's own.
 */

import { InvalidError } from '../errors.js'

export type TlsOptions = { cert: string | Uint8Array; key: string | Uint8Array }

/** Rejects `InvalidError` unless `tls` is a certificate and the private key of it, in PEM. */
export async function checkTls(tls: TlsOptions): Promise<void> {
  const { X509Certificate, createPrivateKey } = await import('node:crypto')
  let cert: import('node:crypto').X509Certificate
  let key: import('node:crypto').KeyObject
  try {
    cert = new X509Certificate(tls.cert)
  } catch (error) {
    throw new InvalidError(`serve: tls.cert cannot be read as a PEM certificate: ${messageOf(error)}`, { cause: error })
  }
  try {
    key = createPrivateKey(typeof tls.key === 'string' ? tls.key : Buffer.from(tls.key))
  } catch (error) {
    throw new InvalidError(`serve: tls.key cannot be read as an unencrypted PEM private key: ${messageOf(error)}`, { cause: error })
  }
  if (!cert.checkPrivateKey(key)) throw new InvalidError(`serve: tls.key is not the key of tls.cert's certificate (${cert.subject.replace(/\n/g, ', ')})`)
}

/**
 * A client's `ca` (`connect(url, { ca })`), read before anything is dialed: PEM text, or its bytes,
 * of one or more certificates. Left to the runtimes, one that is none (a path given for the file's
 * text, junk) was skipped by Node's and Bun's TLS, or refused by Deno's at the handshake, and every
 * connection failed as ClosedError, "cannot reach the server", which callers retry as an outage.
 * Each certificate block is read as an X.509 certificate; text around them (a bundle's comments)
 * is left, as the runtimes leave it. A block is `CERTIFICATE`, or OpenSSL's `TRUSTED CERTIFICATE`
 * (a certificate with its trust settings) or `X509 CERTIFICATE`: Node's TLS trusts those too (Bun's
 * and Deno's skip them, as before this check, and refuse the server as untrusted).
 */
export async function checkCa(ca: string | Uint8Array): Promise<void> {
  const { X509Certificate } = await import('node:crypto')
  const text = typeof ca === 'string' ? ca : new TextDecoder().decode(ca)
  const blocks = text.match(/-----BEGIN ((?:TRUSTED |X509 )?CERTIFICATE)-----[\s\S]*?-----END \1-----/g)
  if (blocks === null) {
    throw new InvalidError(
      'connect: option ca must be PEM certificates: it holds none ("-----BEGIN CERTIFICATE-----"); it takes the text of a file, not its path',
    )
  }
  for (let i = 0; i < blocks.length; i++) {
    try {
      new X509Certificate(blocks[i]!)
    } catch (error) {
      const which = blocks.length === 1 ? 'its certificate' : `certificate ${i + 1} of ${blocks.length}`
      throw new InvalidError(`connect: option ca must be PEM certificates: ${which} cannot be read: ${messageOf(error)}`, { cause: error })
    }
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
