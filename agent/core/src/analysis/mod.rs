//! Analyses from the papers (Call Context Map, CallerChaining, profile comparison,
//! self-tuning interval, method-level phases).
