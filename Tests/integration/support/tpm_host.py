"""The host's side of a TPM key attestation, driven through tpm2-pytss (ESAPI) on a
software TPM: what a host sends the authenticator to prove that a device key lives in its
TPM. Everything it returns is TPM wire form (big-endian, marshalled).

    with SoftwareTPM() as tpm, TPMHost(tpm.tcti, ek_der=tpm.ek_certificate_der()) as host:
        host.create_ek()                      # the EK of the TCG template: the certificate's key
        ak_public = host.create_ak()          # TPM2B_PUBLIC of a restricted signing AK
        key_public = host.create_device_key() # TPM2B_PUBLIC of a fixedTPM signing key
        secret = host.activate(blob, encrypted_secret)     # TPM2_ActivateCredential
        attest, signature = host.certify(nonce)            # TPM2_Certify by the AK
        host.sign_rs256(b"header.payload")                 # RS256 signature made in the TPM

swtpm has no resource manager and three object slots: the AK and the device key stay
loaded; the EK and the storage primary are made again (the same keys: primaries come from
the hierarchy's seed) for each use and flushed after it.
"""

import hashlib

from tpm2_pytss import ESAPI
from tpm2_pytss.constants import ESYS_TR, TPM2_ALG, TPM2_RH, TPM2_SE, TPM2_ST, TPMA_OBJECT
from tpm2_pytss.types import (TPM2B_ENCRYPTED_SECRET, TPM2B_ID_OBJECT, TPM2B_PUBLIC, TPM2B_SENSITIVE_CREATE,
                              TPMT_SIG_SCHEME, TPMT_SYM_DEF, TPMT_TK_HASHCHECK)
from tpm2_pytss.utils import NoSuchIndex, create_ek_template

__all__ = ["TPMHost"]

EK_CERT_INDEX = 0x01C00002

BOUND = TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT | TPMA_OBJECT.SENSITIVEDATAORIGIN | TPMA_OBJECT.USERWITHAUTH


def _size_prefixed(data):
    return len(data).to_bytes(2, "big") + data


class TPMHost:
    """One ESAPI connection to the TPM at `tcti`; `ek_der` is the EK certificate (the
    fixture reads it from NV), from which the EK template is chosen."""

    def __init__(self, tcti, ek_der):
        self.ectx = ESAPI(tcti)
        self.ek_der = ek_der
        self.ak = self.key = None
        self.ak_public = self.key_public = self.key_private = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        for handle in (self.key, self.ak):
            self._flush(handle)
        self.ak = self.key = None
        self.ectx.close()

    def _flush(self, handle):
        if handle is not None:
            try:
                self.ectx.flush_context(handle)
            except Exception:
                pass

    def ek_certificate(self):
        """The EK certificate, DER."""
        return self.ek_der

    def create_ek(self):
        """The RSA-2048 EK of the TCG default template (its public key is the
        certificate's): loaded, returns (handle, TPM2B_PUBLIC); flush the handle after use."""
        def nv_read(index):
            if index == EK_CERT_INDEX:
                return self.ek_der
            raise NoSuchIndex(index)
        _, template = create_ek_template("EK-RSA2048", nv_read)
        handle, public, _, _, _ = self.ectx.create_primary(None, template, ESYS_TR.ENDORSEMENT)
        return handle, public.marshal()

    def _endorsement_session(self):
        """A policy session satisfying the EK's policy, PolicySecret(endorsement)."""
        session = self.ectx.start_auth_session(ESYS_TR.NONE, ESYS_TR.NONE, TPM2_SE.POLICY,
                                               TPMT_SYM_DEF(algorithm=TPM2_ALG.NULL), TPM2_ALG.SHA256)
        self.ectx.policy_secret(ESYS_TR.ENDORSEMENT, session, b"", b"", b"", 0)
        return session

    def create_ak(self, restricted=True):
        """An RSA-2048 AK under the EK: restricted (unless told otherwise) signing key,
        RSASSA-SHA256, bound to this TPM; returns its TPM2B_PUBLIC."""
        attributes = BOUND | TPMA_OBJECT.SIGN_ENCRYPT | (TPMA_OBJECT.RESTRICTED if restricted else 0)
        template = TPM2B_PUBLIC.parse("rsa2048:rsassa-sha256:null", objectAttributes=attributes)
        self._flush(self.ak)
        self.ak = None
        ek, _ = self.create_ek()
        try:
            session = self._endorsement_session()
            private, public, _, _, _ = self.ectx.create(ek, TPM2B_SENSITIVE_CREATE(), template, session1=session)
            self.ectx.flush_context(session)
            session = self._endorsement_session()
            self.ak = self.ectx.load(ek, private, public, session1=session)
            self.ectx.flush_context(session)
        finally:
            self._flush(ek)
        self.ak_public = public.marshal()
        return self.ak_public

    def create_device_key(self, fixed=True):
        """An RSA-2048 signing key under the storage primary; without `fixed` it lacks
        fixedTPM and fixedParent (a key that could be duplicated out). Returns TPM2B_PUBLIC."""
        self._flush(self.key)
        self.key = None
        srk_template = TPM2B_PUBLIC.parse("rsa2048:aes128cfb", objectAttributes=(
            BOUND | TPMA_OBJECT.RESTRICTED | TPMA_OBJECT.DECRYPT | TPMA_OBJECT.NODA))
        srk, _, _, _, _ = self.ectx.create_primary(None, srk_template, ESYS_TR.OWNER)
        attributes = TPMA_OBJECT.SIGN_ENCRYPT | TPMA_OBJECT.USERWITHAUTH | TPMA_OBJECT.SENSITIVEDATAORIGIN
        if fixed:
            attributes |= TPMA_OBJECT.FIXEDTPM | TPMA_OBJECT.FIXEDPARENT
        template = TPM2B_PUBLIC.parse("rsa2048:rsassa-sha256:null", objectAttributes=attributes)
        try:
            private, public, _, _, _ = self.ectx.create(srk, TPM2B_SENSITIVE_CREATE(), template)
            self.key = self.ectx.load(srk, private, public)
        finally:
            self._flush(srk)
        self.key_public, self.key_private, self._key = public.marshal(), private.marshal(), public
        return self.key_public

    def device_key_modulus(self):
        return bytes(self._key.publicArea.unique.rsa)

    def device_key_exponent(self):
        return self._key.publicArea.parameters.rsaDetail.exponent or 65537

    def activate(self, credential_blob, encrypted_secret):
        """TPM2_ActivateCredential of the AK with the EK: the secret the server wrapped.
        Both arguments are the contents of their TPM2B (no size prefix)."""
        blob, _ = TPM2B_ID_OBJECT.unmarshal(_size_prefixed(credential_blob))
        secret, _ = TPM2B_ENCRYPTED_SECRET.unmarshal(_size_prefixed(encrypted_secret))
        ek, _ = self.create_ek()
        session = self._endorsement_session()
        try:
            digest = self.ectx.activate_credential(self.ak, ek, blob, secret,
                                                   session1=ESYS_TR.PASSWORD, session2=session)
        finally:
            self._flush(session)
            self._flush(ek)
        return bytes(digest)

    def certify(self, nonce):
        """TPM2_Certify of the device key by the AK over `nonce`: (TPMS_ATTEST, TPMT_SIGNATURE)."""
        scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.RSASSA)
        scheme.details.any.hashAlg = TPM2_ALG.SHA256
        attest, signature = self.ectx.certify(self.key, self.ak, nonce, scheme,
                                              session1=ESYS_TR.PASSWORD, session2=ESYS_TR.PASSWORD)
        return bytes(attest), signature.marshal()

    def sign_rs256(self, data):
        """The device key's RSASSA-SHA256 signature of `data`, made in the TPM."""
        scheme = TPMT_SIG_SCHEME(scheme=TPM2_ALG.RSASSA)
        scheme.details.any.hashAlg = TPM2_ALG.SHA256
        ticket = TPMT_TK_HASHCHECK(tag=TPM2_ST.HASHCHECK, hierarchy=TPM2_RH.NULL)
        signature = self.ectx.sign(self.key, hashlib.sha256(data).digest(), scheme, ticket)
        return bytes(signature.signature.rsassa.sig)
