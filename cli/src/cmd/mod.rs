pub mod ingest; pub mod inspect; pub mod sql; pub mod synth;
pub mod probe;
pub mod plan; pub mod simulate; pub mod verify;
