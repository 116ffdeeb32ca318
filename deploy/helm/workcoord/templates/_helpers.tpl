{{/* The base of every object name: the release name when it already says "workcoord". */}}
{{- define "workcoord.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object; "component" as the second element of a list: (list $ "gateway"). */}}
{{- define "workcoord.labels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: workcoord
app.kubernetes.io/component: {{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/part-of: workcoord
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version }}
{{- end -}}

{{/* What selects one component's pods (stable across upgrades: never add to it). */}}
{{- define "workcoord.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: workcoord
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "workcoord.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* One variable from a Secret: (list NAME REF OPTIONAL). */}}
{{- define "workcoord.secretEnv" -}}
{{- $ref := index . 1 -}}
- name: {{ index . 0 }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.name }}
      key: {{ $ref.key }}
      {{- if index . 2 }}
      optional: true
      {{- end }}
{{- end -}}

{{- define "workcoord.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "workcoord.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* The shared settings (the ConfigMap's data), as a YAML map of strings. */}}
{{- define "workcoord.config" -}}
{{- $name := include "workcoord.fullname" . -}}
WORKCOORD_COORDINATOR_ADDRESS: {{ printf "%s-coordinator:50051" $name | quote }}
WORKCOORD_RECOVERY_ADDRESS: {{ printf "%s-recovery:50052" $name | quote }}
WORKCOORD_RECOVERY_INTERVAL_SECONDS: {{ .Values.recovery.intervalSeconds | toString | quote }}
WORKCOORD_RECOVERY_LEADERSHIP_SECONDS: {{ .Values.recovery.leadershipSeconds | toString | quote }}
# Inside a pod each service listens on all interfaces (the default is loopback).
WORKCOORD_LISTEN_COORDINATOR: "0.0.0.0:50051"
WORKCOORD_LISTEN_RECOVERY: "0.0.0.0:50052"
WORKCOORD_LISTEN_GATEWAY: "0.0.0.0:8080"
WORKCOORD_METRICS_PORT: "9464"
WORKCOORD_MAX_BODY_BYTES: {{ .Values.gateway.maxBodyBytes | int64 | toString | quote }}
WORKCOORD_LOG_JSON: {{ .Values.log.json | toString | quote }}
WORKCOORD_LOG_LEVEL: {{ .Values.log.level | quote }}
WORKCOORD_GITHUB_API_URL: {{ .Values.github.apiUrl | quote }}
WORKCOORD_OIDC_ISSUER: {{ .Values.oidc.issuer | quote }}
WORKCOORD_OIDC_CLIENT_ID: {{ .Values.oidc.clientId | quote }}
WORKCOORD_OIDC_REDIRECT_URL: {{ .Values.oidc.redirectUrl | quote }}
WORKCOORD_OIDC_AUDIENCE: {{ .Values.oidc.audience | quote }}
WORKCOORD_SMTP_URL: {{ .Values.smtp.url | quote }}
WORKCOORD_SMTP_FROM: {{ .Values.smtp.from | quote }}
WORKCOORD_PUBLIC_URL: {{ .Values.publicUrl | quote }}
OTEL_TRACES_EXPORTER: {{ .Values.tracing.exporter | quote }}
{{- with .Values.tracing.otlpEndpoint }}
OTEL_EXPORTER_OTLP_ENDPOINT: {{ . | quote }}
{{- end }}
{{- with .Values.environment }}
OTEL_RESOURCE_ATTRIBUTES: {{ printf "deployment.environment=%s" . | quote }}
{{- end }}
{{- if .Values.tls.enabled }}
WORKCOORD_TLS_CERT_FILE: /etc/workcoord/tls/tls.crt
WORKCOORD_TLS_KEY_FILE: /etc/workcoord/tls/tls.key
WORKCOORD_TLS_CLIENT_CA_FILE: /etc/workcoord/tls/ca.crt
WORKCOORD_TLS_CA_FILE: /etc/workcoord/tls/ca.crt
{{- end }}
{{- end -}}
