"""What kube-controller-manager (and a starting kube-apiserver) would do, emulated in process: garbage
collection through ownerReferences and namespace clean-up, the Deployment and ReplicaSet
controllers, the objects kept in every namespace (its default ServiceAccount, kube-root-ca.crt) and
those the apiserver makes when it starts."""
