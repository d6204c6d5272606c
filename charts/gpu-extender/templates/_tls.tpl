{{- /*
gpu-extender.servingCert: the Secret data of a serving certificate that helm generates
(tls.source: generate), for the extender service and the webhook alike.

  include "gpu-extender.servingCert" (dict "root" . "secretName" $name "cn" $host "dnsNames" $list)

returns YAML: {crt, key, ca, caKey, notAfter, renewed} (base64 except notAfter and renewed).
The caller writes crt/key/ca into `secretName` (mounted by the pods) and ca/caKey into
`secretName`-ca, which no pod mounts: the CA key never reaches a serving process.

Certificates expire; helm keeps what `lookup` finds, so a Secret made once would be served until
it expired and the webhook failed open. Here:
- the CA is kept with its key (Secret <secretName>-ca), valid for tls.caValidityDays (10 years
  by default);
- the serving certificate is re-issued from that same CA on any install or upgrade less than
  tls.renewBeforeDays before its notAfter (annotation gpu-extender.io/not-after), so caBundle
  and the control plane's caFile stay valid;
- a Secret from an older chart (no ca.key) is kept until it is due, then replaced by a new CA
  and certificate (the webhook's caBundle follows in the same release; the extender service's
  CA must be copied to the control plane again: NOTES says so).
`helm template` has no cluster and generates afresh every time.
The serving key is ECDSA P-256 (the CA stays helm's RSA 2048): kube-scheduler opens a new
connection whenever binds overlap (it keeps two idle), so the server's signature in every
handshake is on the burst's path: 0.44 ms of the extender's CPU with P-256 against 0.68 with RSA
2048 (benchmarks/README.md, issue 22, nineteenth session). cert-manager certificates are P-256
too (tls.yaml, webhook.yaml).
*/ -}}
{{- define "gpu-extender.servingCert" -}}
{{- $root := .root }}
{{- $days := int $root.Values.tls.validityDays }}
{{- $renewBefore := int $root.Values.tls.renewBeforeDays }}
{{- $layout := "2006-01-02T15:04:05Z07:00" }}
{{- $existing := lookup "v1" "Secret" $root.Release.Namespace .secretName }}
{{- $caSecret := lookup "v1" "Secret" $root.Release.Namespace (printf "%s-ca" .secretName) }}
{{- $data := dict }}
{{- $annotations := dict }}
{{- $caKey := "" }}
{{- if $existing }}
{{- $data = $existing.data | default dict }}
{{- $annotations = $existing.metadata.annotations | default dict }}
{{- end }}
{{- if and $caSecret $caSecret.data }}
{{- $caKey = index $caSecret.data "ca.key" | default "" }}
{{- end }}
{{- $due := true }}
{{- $notAfter := index $annotations "gpu-extender.io/not-after" | default "" }}
{{- if and (index $data "tls.crt") $notAfter }}
{{- $deadline := now | dateModify (printf "+%dh" (mul 24 $renewBefore)) }}
{{- $due = lt ((toDate $layout $notAfter).Unix) ($deadline.Unix) }}
{{- else if index $data "tls.crt" }}
{{- /* an older chart's Secret: no recorded expiry; keep it unless it lacks its CA */}}
{{- $due = not (index $data "ca.crt") }}
{{- end }}
{{- if not $due }}
crt: {{ index $data "tls.crt" }}
key: {{ index $data "tls.key" }}
ca: {{ index $data "ca.crt" }}
caKey: {{ $caKey | quote }}
notAfter: {{ $notAfter | quote }}
renewed: false
{{- else }}
{{- $ca := dict }}
{{- if and (index $data "ca.crt") $caKey }}
{{- $ca = buildCustomCert (index $data "ca.crt") $caKey }}
{{- else }}
{{- $ca = genCA (printf "%s-ca" .cn) (int $root.Values.tls.caValidityDays) }}
{{- end }}
{{- $cert := genSignedCertWithKey .cn nil .dnsNames $days $ca (genPrivateKey "ecdsa") }}
crt: {{ $cert.Cert | b64enc }}
key: {{ $cert.Key | b64enc }}
ca: {{ $ca.Cert | b64enc }}
caKey: {{ $ca.Key | b64enc }}
notAfter: {{ now | dateModify (printf "+%dh" (mul 24 $days)) | date $layout | quote }}
renewed: {{ and (not (empty $existing)) true }}
{{- end }}
{{- end }}

{{- /*
gpu-extender.servingCertSecrets: the two Secrets of a generated serving certificate: the one
the pods mount (tls.crt, tls.key, ca.crt; annotated with its notAfter) and <name>-ca (the CA and
its key, mounted by nothing, read back by the next upgrade to re-issue).
*/ -}}
{{- define "gpu-extender.servingCertSecrets" -}}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .secretName }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- .labels | nindent 4 }}
  annotations:
    gpu-extender.io/not-after: {{ .cert.notAfter | quote }}
type: kubernetes.io/tls
data:
  tls.crt: {{ .cert.crt }}
  tls.key: {{ .cert.key }}
  ca.crt: {{ .cert.ca }}
{{- if .cert.caKey }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .secretName }}-ca
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- .labels | nindent 4 }}
type: Opaque
data:
  ca.crt: {{ .cert.ca }}
  ca.key: {{ .cert.caKey }}
{{- end }}
{{- end }}
