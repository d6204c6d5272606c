{{/* Names and labels. */}}
{{- define "gpu-extender.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpu-extender.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-extender.labels" -}}
{{ include "gpu-extender.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "gpu-extender.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpu-extender.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* repository:tag, or repository@digest when a digest is given. Argument: an image dict
     and the default tag. */}}
{{- define "gpu-extender.imageRef" -}}
{{- $image := index . 0 -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default (index . 1) $image.tag) -}}
{{- end -}}
{{- end -}}

{{- /* The cluster's Kubernetes version as a kube-scheduler image tag: v1.31.2-eks-f69f56f is
     v1.31.2, v1.33.5-gke.1308000 is v1.33.5. */ -}}
{{- define "gpu-extender.clusterVersion" -}}
{{- regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version -}}
{{- end -}}

{{- define "gpu-extender.validate" -}}
{{- if not (has .Values.mode (list "second-scheduler" "extender-service")) -}}
{{- fail (printf "mode: %q is not accepted; use second-scheduler or extender-service" .Values.mode) -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) (eq .Values.mode "second-scheduler") -}}
{{- fail (printf "replicas: %d needs leaderElection.enabled=true (two schedulers would both schedule)" (int .Values.replicas)) -}}
{{- end -}}
{{- if not (has .Values.tls.source (list "generate" "certManager" "existing")) -}}
{{- fail (printf "tls.source: %q is not accepted; use generate, certManager or existing" .Values.tls.source) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding tls.crt / tls.key / ca.crt in extender-service mode. */}}
{{- define "gpu-extender.tlsSecretName" -}}
{{- if eq .Values.tls.source "existing" -}}
{{- required "tls.existingSecret is required when tls.source is existing" .Values.tls.existingSecret -}}
{{- else -}}
{{- printf "%s-tls" (include "gpu-extender.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "gpu-extender.serviceHost" -}}
{{- printf "%s.%s.svc" (include "gpu-extender.fullname" .) .Release.Namespace -}}
{{- end -}}

{{/* The extender container, shared by both modes. Argument: the root context. */}}
{{- define "gpu-extender.extenderContainer" -}}
{{- $service := eq .Values.mode "extender-service" -}}
- name: gpu-extender
  image: {{ include "gpu-extender.imageRef" (list .Values.image .Chart.AppVersion) | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - serve
    - --config=/etc/gpu-extender/platform.yaml
    {{- if $service }}
    - --host=0.0.0.0
    {{- else }}
    - --host=127.0.0.1
    {{- end }}
    - --port={{ .Values.extender.port }}
    - --threads={{ .Values.extender.threads }}
    - --log-level={{ .Values.extender.logLevel }}
    - --monitoring-address=0.0.0.0:{{ .Values.extender.monitoringPort }}
    {{- if not .Values.extender.debugEndpoints }}
    - --no-debug-endpoints
    {{- end }}
    {{- if .Values.extender.publishNodeCapacity }}
    - --publish-node-capacity
    - --leader-namespace={{ .Release.Namespace }}
    {{- end }}
    {{- if $service }}
    - --tls-cert-file=/etc/gpu-extender-tls/tls.crt
    - --tls-private-key-file=/etc/gpu-extender-tls/tls.key
    {{- if .Values.tls.clientCA }}
    - --client-ca-file=/etc/gpu-extender-client-ca/ca.crt
    {{- end }}
    {{- end }}
  ports:
    - {name: {{ if $service }}https{{ else }}http{{ end }}, containerPort: {{ .Values.extender.port }}}
    - {name: monitoring, containerPort: {{ .Values.extender.monitoringPort }}}
  # The monitoring listener is bound on the pod IP, where the kubelet sends probes. Readiness
  # stays false until the first full list of nodes and pods is in the inventory.
  startupProbe:
    httpGet: {path: /healthz, port: monitoring}
    periodSeconds: 2
    failureThreshold: 30
  livenessProbe:
    httpGet: {path: /healthz, port: monitoring}
    periodSeconds: 10
    failureThreshold: 3
  readinessProbe:
    httpGet: {path: /readyz, port: monitoring}
    periodSeconds: 5
    failureThreshold: 2
  resources:
    {{- toYaml .Values.extender.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  volumeMounts:
    - {name: platform-config, mountPath: /etc/gpu-extender, readOnly: true}
    - {name: tmp, mountPath: /tmp}
    {{- if $service }}
    - {name: tls, mountPath: /etc/gpu-extender-tls, readOnly: true}
    {{- if .Values.tls.clientCA }}
    - {name: client-ca, mountPath: /etc/gpu-extender-client-ca, readOnly: true}
    {{- end }}
    {{- end }}
{{- end -}}

{{/* Pod-level settings shared by both modes. */}}
{{- define "gpu-extender.podSpecCommon" -}}
serviceAccountName: {{ include "gpu-extender.serviceAccountName" . }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The KubeSchedulerConfiguration. Argument: the root context. */}}
{{- define "gpu-extender.schedulerConfig" -}}
{{- $service := eq .Values.mode "extender-service" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: {{ .Values.leaderElection.enabled }}
  resourceLock: leases
  resourceNamespace: {{ if $service }}kube-system{{ else }}{{ .Release.Namespace }}{{ end }}
  resourceName: {{ if $service }}kube-scheduler{{ else }}{{ .Values.scheduler.name }}{{ end }}
  leaseDuration: {{ .Values.leaderElection.leaseDuration }}
  renewDeadline: {{ .Values.leaderElection.renewDeadline }}
  retryPeriod: {{ .Values.leaderElection.retryPeriod }}
clientConnection:
  kubeconfig: {{ if $service }}/etc/kubernetes/scheduler.conf{{ else }}""{{ end }}
  qps: {{ .Values.scheduler.qps }}
  burst: {{ .Values.scheduler.burst }}
profiles:
  - schedulerName: {{ if $service }}default-scheduler{{ else }}{{ .Values.scheduler.name }}{{ end }}
    percentageOfNodesToScore: 100
extenders:
  {{- if $service }}
  - urlPrefix: https://{{ include "gpu-extender.serviceHost" . }}:{{ .Values.service.port }}
    enableHTTPS: true
    tlsConfig:
      caFile: /etc/kubernetes/gpu-extender/ca.crt
      serverName: {{ include "gpu-extender.serviceHost" . }}
      {{- if .Values.tls.clientCA }}
      certFile: /etc/kubernetes/gpu-extender/scheduler-client.crt
      keyFile: /etc/kubernetes/gpu-extender/scheduler-client.key
      {{- end }}
  {{- else }}
  - urlPrefix: http://127.0.0.1:{{ .Values.extender.port }}
  {{- end }}
    filterVerb: filter
    prioritizeVerb: prioritize
    weight: {{ .Values.extender.weight }}
    bindVerb: bind
    preemptVerb: preempt
    httpTimeout: {{ .Values.extender.httpTimeout }}
    nodeCacheCapable: true
    ignorable: {{ .Values.extender.ignorable }}
    managedResources:
      {{- toYaml (include "gpu-extender.managedResources" . | fromYamlArray) | nindent 6 }}
{{- end -}}

{{/* managedResources: the values' list (the shipped catalog and foreign forms, kept equal to
     scheduler-config/ by tests), plus what `platform` adds: the MIG profiles of its
     `accelerators` entries and its `foreignForms.vramResources`, so a type or a VRAM resource
     added there reaches the extender without a second edit. */}}
{{- define "gpu-extender.managedResources" -}}
{{- $names := dict }}
{{- $out := list }}
{{- range .Values.managedResources }}
{{- $_ := set $names .name true }}
{{- $out = append $out . }}
{{- end }}
{{- range (.Values.platform.accelerators | default list) }}
{{- range ((.mig | default dict).profiles | default list) }}
{{- $name := printf "nvidia.com/mig-%s" .name }}
{{- if not (hasKey $names $name) }}
{{- $_ := set $names $name true }}
{{- $out = append $out (dict "name" $name "ignoredByScheduler" false) }}
{{- end }}
{{- end }}
{{- end }}
{{- range ((.Values.platform.foreignForms | default dict).vramResources | default list) }}
{{- if not (hasKey $names .name) }}
{{- $_ := set $names .name true }}
{{- $out = append $out (dict "name" .name "ignoredByScheduler" false) }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}

{{/* The component label of the pods that run the extender (PDB and metrics Service). */}}
{{- define "gpu-extender.component" -}}
{{- if eq .Values.mode "extender-service" }}extender{{ else }}scheduler{{ end -}}
{{- end -}}

{{/* The platform config file (values `platform`). With the webhook on, admission.schedulerName
     defaults to the chart's scheduler: scheduler.name in second-scheduler mode, and off in
     extender-service mode, where the default scheduler already calls the extender. With demand
     on, demand.mode is the chart's demand.mode and demand.priorityClassName its class. */}}
{{- define "gpu-extender.platformConfig" -}}
{{- $platform := deepCopy .Values.platform -}}
{{- if .Values.webhook.enabled -}}
{{- $admission := dict -}}
{{- if kindIs "map" (get $platform "admission") -}}
{{- $admission = get $platform "admission" -}}
{{- end -}}
{{- if not (hasKey $admission "schedulerName") -}}
{{- $_ := set $admission "schedulerName" (dict "enabled" (eq .Values.mode "second-scheduler") "name" .Values.scheduler.name) -}}
{{- end -}}
{{- $_ := set $platform "admission" $admission -}}
{{- end -}}
{{- if .Values.demand.enabled -}}
{{- /* demand: the chart's mode (its RBAC follows it) and PriorityClass, unless set there. */ -}}
{{- $demand := dict -}}
{{- if kindIs "map" (get $platform "demand") -}}
{{- $demand = get $platform "demand" -}}
{{- end -}}
{{- if and (hasKey $demand "mode") (ne (toString $demand.mode) .Values.demand.mode) -}}
{{- fail (printf "platform.demand.mode: %q differs from demand.mode %q (the chart grants the rights of demand.mode); set one" (toString $demand.mode) .Values.demand.mode) -}}
{{- end -}}
{{- $_ := set $demand "mode" .Values.demand.mode -}}
{{- if not (hasKey $demand "priorityClassName") -}}
{{- $_ := set $demand "priorityClassName" .Values.demand.priorityClass.name -}}
{{- end -}}
{{- $_ := set $platform "demand" $demand -}}
{{- end -}}
{{- /* scoreCut: the extender weight the scheduler config renders (one value, so the two cannot
disagree); the chart's profile is kube-scheduler's default one (inTreeScoreMax 1500). */ -}}
{{- $cut := dict -}}
{{- if kindIs "map" (get $platform "scoreCut") -}}
{{- $cut = get $platform "scoreCut" -}}
{{- end -}}
{{- if and (hasKey $cut "extenderWeight") (ne (int $cut.extenderWeight) (int .Values.extender.weight)) -}}
{{- fail (printf "platform.scoreCut.extenderWeight: %v differs from extender.weight %v (the scheduler config's weight); set extender.weight only" $cut.extenderWeight .Values.extender.weight) -}}
{{- end -}}
{{- $_ := set $cut "extenderWeight" (int .Values.extender.weight) -}}
{{- $_ := set $platform "scoreCut" $cut -}}
{{- toYaml $platform -}}
{{- end -}}
