"""Field management: the three PATCH flavours, server-side apply, and `metadata.managedFields` (who set
which field), as kube-apiserver's field manager keeps them, with the schema knowledge apply needs
(which values are owned whole, how lists merge) and FieldsV1 sets of field paths."""
