"""Everything that knows the shape of Kubernetes objects: decoding Pods and Nodes into domain
values, the annotations we persist, and (in the service) watches and binds."""
