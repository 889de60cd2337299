/**
 * A server's certificate and key (`serve({ tls: { cert, key } })`), read before it listens, so that a
 * pair that cannot serve is an `InvalidError` naming `tls.cert` or `tls.key`, the same on every
 * runtime, and nothing listens. Left to the runtimes, Node and Bun refused it with their own errors
 * (`ERR_OSSL_…`, unnamed), Node took an empty certificate, and Deno (`node:https` under its Node APIs)
 * took any: it listened, and failed every handshake.
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

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
